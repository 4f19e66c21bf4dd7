//! Frame colours: the fixed stall-share scale of the CPI graph, the fixed share-change scale
//! of the differential graph, and the name-hashed warm palette of the single-event graph.

use std::fmt;

/// An sRGB colour, written to SVG as `#rrggbb`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rgb(pub u8, pub u8, pub u8);

impl fmt::Display for Rgb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{:02x}{:02x}{:02x}", self.0, self.1, self.2)
    }
}

// The stall scale: red (0% of the frame's cycles stalled) through purple (50%) to blue (100%).
//
// Why these three stops:
// * A diverging red/white/blue scale (as in differential flame graphs) makes frames near 50%
//   white and nearly invisible, and half-stalled code is exactly what one wants to see. Here
//   the middle is a saturated violet, so every frame is visibly coloured.
// * The three stops (and every sRGB blend between them) have nearly the same relative
//   luminance, 0.22-0.24, so the eye reads the hue rather than brightness, wide and narrow
//   frames look equally "heavy", and black 12 px labels keep a contrast ratio of about 5.4:1
//   or better everywhere on the scale (WCAG AA asks for 4.5:1).
// * Red versus blue stays distinguishable for the common red-green colour deficiencies
//   (they differ along the blue-yellow axis).
// The colour is a piecewise-linear blend in sRGB between the stops, which is also how the SVG
// `<linearGradient>` legend with the same three stops is painted, so the legend matches.

/// Colour of a frame none of whose cycles were stalled.
pub const STALL_RED: Rgb = Rgb(238, 80, 70);
/// Colour of a frame with half of its cycles stalled.
pub const STALL_MID: Rgb = Rgb(176, 100, 210);
/// Colour of a frame all of whose cycles were stalled.
pub const STALL_BLUE: Rgb = Rgb(70, 130, 240);
/// Colour of a frame whose stall share is unknown (no cycles period in it).
pub(crate) const UNKNOWN_GREY: Rgb = Rgb(190, 190, 190);

pub(crate) fn lerp(a: Rgb, b: Rgb, t: f64) -> Rgb {
    let ch = |x: u8, y: u8| (f64::from(x) + (f64::from(y) - f64::from(x)) * t).round() as u8;
    Rgb(ch(a.0, b.0), ch(a.1, b.1), ch(a.2, b.2))
}

/// What an uncertain frame's colour is washed towards (see [`uncertain_color`]).
pub const PALE: Rgb = Rgb(244, 244, 242);
/// How far [`uncertain_color`] washes a colour towards [`PALE`].
pub const UNCERTAIN_WASH: f64 = 0.6;

/// A frame whose ratio's confidence interval is too wide to place it on the colour scale
/// (`cpiflame_profile::interval`): its colour washed out, 60% of the way to near-white, so
/// the hue still says which end it is nearer while the eye reads it as not to be trusted: more
/// than twice as light as the scale's colours (relative luminance 0.54 washed red, 0.56
/// violet, 0.58 blue, against 0.23-0.24), and tinted where the grey of frames without cycles
/// (0.52) is neutral.
pub fn uncertain_color(colour: Rgb) -> Rgb {
    lerp(colour, PALE, UNCERTAIN_WASH)
}

/// The colour for a stall share (stalled cycles / all cycles). The share is clamped to
/// `[0, 1]`; `None` (no cycles to compare against) gives a neutral grey.
pub fn stall_color(share: Option<f64>) -> Rgb {
    let Some(share) = share.filter(|s| !s.is_nan()) else {
        return UNKNOWN_GREY;
    };
    let t = share.clamp(0.0, 1.0);
    if t <= 0.5 {
        lerp(STALL_RED, STALL_MID, t * 2.0)
    } else {
        lerp(STALL_MID, STALL_BLUE, (t - 0.5) * 2.0)
    }
}

// The wall-time states (render_wall): a frame's rectangle is cut into
// segments in proportion to the time its threads spent in each state. The on-CPU part keeps
// the meaning it has everywhere else: running red and stalled blue are the stall scale's two
// ends (STALL_RED, STALL_BLUE), the on-CPU segment of a file with instructions but no stalls is
// on the CPI scale, so red and blue still mean "working" and "waiting in the core". The two
// off-CPU states are told apart from those and from each other by lightness and texture as
// well as hue, so they read apart in grey scale and for colour-blind readers too:
// * runnable (waiting for a CPU) is a light amber, relative luminance 0.57, more than twice
//   that of the stall scale (0.23-0.24): a "waiting for its turn" traffic-light colour
//   that no part of the stall scale comes near;
// * blocked is a pale warm grey (0.74) with darker horizontal stripes (0.46): the quietest
//   colour, because blocked time is often most of the wall time and the eye should go to the
//   time spent running, and the stripes mark it even where hue is not seen at all;
//   horizontal, because zooming stretches frames sideways only, and horizontal stripes stay
//   the same under that stretch (a hairline of background between frames keeps striped
//   siblings apart);
// * on-CPU time that cannot be split (no stall or instructions column) is a mid teal, neither
//   red nor blue, so it does not claim to be "not stalled" (luminance 0.28, near the stall
//   scale's); it never appears next to stalled blue.
// Black 12 px labels keep a contrast of 5.6:1 or more on all of them (10:1 on the stripes).

/// Colour of on-CPU time that is not split into running and stalled (no stall or
/// instructions column).
pub const WALL_ON_CPU: Rgb = Rgb(52, 160, 140);
/// Colour of runnable time: ready to run, waiting for a CPU.
pub const WALL_RUNNABLE: Rgb = Rgb(246, 190, 64);
/// Colour of blocked time: off the CPU and not runnable (sleeping, waiting for I/O or a lock).
pub const WALL_BLOCKED: Rgb = Rgb(226, 223, 214);
/// Colour of the horizontal stripes over [`WALL_BLOCKED`].
pub const WALL_BLOCKED_STRIPES: Rgb = Rgb(184, 180, 168);

// The top-down picture (`topdown.rs`): a frame's hue says which level-1 category dominates
// its slots, its intensity how much (pale at the lowest share a dominant category can have,
// 1/4 of four, full at 100%).
// * The project's convention holds: red is work (retiring, as "running" on the stall scale)
//   and blue is waiting in the core (back-end bound, as "stalled"); both are the stall
//   scale's ends, so a reader of the CPI graph reads them the same way.
// * The other two are Okabe and Ito's colour-blind-safe amber (front end) and bluish green
//   (bad speculation): the four differ along the blue-yellow axis or in lightness as well as
//   in hue, so deuteranopes and protanopes still tell red (dark yellow-brown to them) from
//   amber (light yellow) and green (grey-blue) from blue (saturated blue). AMD's fifth,
//   SMT contention, is a muted violet, away from the four.
// * Every full hue has a relative luminance of 0.21-0.48, so black 12 px labels keep a
//   contrast of 5.2:1 or better (WCAG AA asks 4.5:1); the pale end of the intensity ramp is
//   lighter still.
// * Level 2 shifts the hue a little within its family, at about the same luminance, so
//   shade says which child dominates while lightness keeps meaning intensity: retiring's
//   light operations are the base red and heavy operations (microcode) a rose; the front
//   end's fetch latency a deeper amber and fetch bandwidth a yellow; bad speculation's branch
//   mispredicts a deeper green and machine clears a teal; the back end's memory bound a
//   deeper blue and core bound a sky blue.
// * The intensity ramp runs from TOPDOWN_PALE_END of the way to PALE to the full hue; the
//   washed-out marking of uncertain frames (`uncertain_color`, 60% of the way) starts
//   beyond the ramp's pale end, so a weakly dominant frame is not mistaken for an uncertain
//   one.

/// Hues of the top-down categories: `[level 1, first level-2 child, second child]`, the
/// children in `cpiflame_profile::topdown::Level2`'s order.
pub const TOPDOWN_RETIRING: [Rgb; 3] = [STALL_RED, Rgb(222, 72, 128), STALL_RED];
/// Bad speculation: branch mispredicts, machine clears.
pub const TOPDOWN_BAD_SPECULATION: [Rgb; 3] =
    [Rgb(0, 160, 120), Rgb(0, 150, 100), Rgb(40, 170, 160)];
/// Front end: fetch latency, fetch bandwidth.
pub const TOPDOWN_FRONTEND: [Rgb; 3] = [Rgb(226, 150, 0), Rgb(214, 128, 0), Rgb(226, 178, 20)];
/// Back end: memory bound, core bound.
pub const TOPDOWN_BACKEND: [Rgb; 3] = [STALL_BLUE, Rgb(70, 120, 240), Rgb(60, 165, 230)];
/// AMD's SMT contention (no level 2).
pub const TOPDOWN_SMT: Rgb = Rgb(170, 120, 200);
/// How far towards [`PALE`] the intensity ramp's pale end (a dominant share at its lowest)
/// is.
pub const TOPDOWN_PALE_END: f64 = 0.4;

/// `hue` at intensity `t` in `[0, 1]` (clamped): [`TOPDOWN_PALE_END`] of the way to
/// [`PALE`] at 0, the hue itself at 1.
pub fn topdown_intensity(hue: Rgb, t: f64) -> Rgb {
    let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
    lerp(hue, PALE, TOPDOWN_PALE_END * (1.0 - t))
}

// The CPI scale, used when a file has cycles and instructions but no stall event: the same
// three stops as the stall scale (so red still means "running" and blue "waiting", with the
// same luminance and contrast properties), placed on a logarithmic CPI axis. CPI is a ratio,
// so equal factors should look equally far apart: 0.25 → 0.5 is as much a change as 2 → 4.
// The axis is fixed, not fitted to the file, so a colour means the same CPI in every picture:
// CPI_LOW (0.25, four instructions a cycle, about the retire width of current x86 and ARM
// cores) and below is red, 1 is violet, CPI_HIGH (4) and above is blue. The position on the
// bar is (log2(cpi) - log2(CPI_LOW)) / (log2(CPI_HIGH) - log2(CPI_LOW)), so the legend's
// `<linearGradient>` with the same stops at 0, ½ and 1 paints the same colours as the frames.

/// CPI at and below which a frame is [`STALL_RED`] (the left end of the CPI scale).
pub const CPI_LOW: f64 = 0.25;
/// CPI at and above which a frame is [`STALL_BLUE`] (the right end of the CPI scale).
pub const CPI_HIGH: f64 = 4.0;

/// Position of `cpi` on the CPI scale, in `[0, 1]`: `(log2(cpi) - log2(CPI_LOW)) /
/// (log2(CPI_HIGH) - log2(CPI_LOW))`, clamped. `None` for a CPI that is not a positive number
/// (unknown: no instructions, or no cycles).
pub fn cpi_position(cpi: f64) -> Option<f64> {
    // NaN, zero, negative and infinite are all "unknown".
    if cpi.is_nan() || cpi <= 0.0 || cpi.is_infinite() {
        return None;
    }
    let (lo, hi) = (CPI_LOW.log2(), CPI_HIGH.log2());
    Some(((cpi.log2() - lo) / (hi - lo)).clamp(0.0, 1.0))
}

/// The colour for a CPI (cycles per instruction) on the fixed logarithmic scale: red at
/// [`CPI_LOW`] and below, violet at 1, blue at [`CPI_HIGH`] and above, the stall scale's stops
/// in between (see [`stall_color`]). Unknown (`None`, NaN, zero, negative or infinite) gives
/// the same grey as an unknown stall share.
pub fn cpi_color(cpi: Option<f64>) -> Rgb {
    stall_color(cpi.and_then(cpi_position))
}

// The share-change scale of the differential graph: blue (the frame's share of its run's
// samples shrank) through a light neutral grey (unchanged) to red (grew).
//
// Why this scale:
// * It is fixed: the same colour means the same change in every comparison, and a comparison
//   of two runs that differ only by noise stays pale instead of being stretched to full red
//   and blue (which a scale fitted to the largest change would do).
// * It is compressed by a square root and saturates at ±DIFF_SPAN (20 points): position on the
//   scale is sign(d)·sqrt(min(|d| / 20 points, 1)). A real regression of one function is often
//   only 1-3 points of the total, which a linear ±20 scale would leave nearly white (5-15% of
//   the way); with the root, 1 point is 22% of the way and 5 points half of it, while 10 and
//   20 points still differ (71% and 100%). Changes beyond 20 points are all full colour; the
//   tooltip gives the number.
// * The ends are the CPI graph's red and blue stops: same luminance (about 0.23), so black
//   labels keep at least the CPI graph's 5.4:1 contrast everywhere on the scale, and red versus
//   blue stays distinguishable for red-green colour deficiencies. Neutral is a light grey
//   rather than white so that unchanged frames stay visible on the near-white background.
// * The colour is a piecewise-linear sRGB blend in scale position, which is also how the
//   legend's `<linearGradient>` (neutral at its middle) paints its bar; the legend's labels
//   are placed at their scale positions, so legend and frames agree.

/// Colour of a frame whose share grew by [`DIFF_SPAN`] or more.
pub const DIFF_GREW: Rgb = STALL_RED;
/// Colour of a frame whose share of its run's samples did not change.
pub const DIFF_NEUTRAL: Rgb = Rgb(226, 226, 222);
/// Colour of a frame whose share shrank by [`DIFF_SPAN`] or more.
pub const DIFF_SHRANK: Rgb = STALL_BLUE;
/// The change of share (as a fraction: 0.2 = 20 percentage points) at which the
/// differential scale saturates.
pub const DIFF_SPAN: f64 = 0.2;

/// Position of a change of share on the differential scale, in `[-1, 1]`:
/// `sign(change) * sqrt(min(|change| / DIFF_SPAN, 1))`. NaN gives 0.
pub(crate) fn diff_position(change: f64) -> f64 {
    if change.is_nan() {
        return 0.0;
    }
    let t = (change.abs() / DIFF_SPAN).min(1.0).sqrt();
    if change < 0.0 {
        -t
    } else {
        t
    }
}

/// The colour for a change of a frame's share of its run's samples, `after_share -
/// before_share` as a fraction (`0.15` = 15 percentage points more): red when it grew, blue
/// when it shrank, [`DIFF_NEUTRAL`] when unchanged, on a fixed square-root scale saturating at
/// ±[`DIFF_SPAN`]. NaN gives the neutral colour.
pub fn diff_color(change: f64) -> Rgb {
    let t = diff_position(change);
    if t >= 0.0 {
        lerp(DIFF_NEUTRAL, DIFF_GREW, t)
    } else {
        lerp(DIFF_NEUTRAL, DIFF_SHRANK, -t)
    }
}

/// 64-bit FNV-1a: a fixed, platform-independent hash, so colours never change between runs.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A warm colour (reds, oranges, yellows) picked from the frame name, for the single-event
/// graph where colour carries no measurement: same name, same colour, in every file.
pub(crate) fn warm_color(name: &str) -> Rgb {
    let h = fnv1a(name.as_bytes());
    let unit = |shift: u32| ((h >> shift) & 0xffff) as f64 / 65535.0;
    Rgb(
        (210.0 + 45.0 * unit(0)).round() as u8,
        (70.0 + 140.0 * unit(16)).round() as u8,
        (20.0 + 50.0 * unit(32)).round() as u8,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_ends_and_middle_are_the_stops() {
        assert_eq!(stall_color(Some(0.0)), STALL_RED);
        assert_eq!(stall_color(Some(0.5)), STALL_MID);
        assert_eq!(stall_color(Some(1.0)), STALL_BLUE);
        assert_eq!(stall_color(Some(-3.0)), STALL_RED);
        assert_eq!(stall_color(Some(7.0)), STALL_BLUE);
        assert_eq!(stall_color(Some(f64::INFINITY)), STALL_BLUE);
        assert_eq!(stall_color(None), UNKNOWN_GREY);
        assert_eq!(stall_color(Some(f64::NAN)), UNKNOWN_GREY);
        assert_eq!(stall_color(Some(0.25)), Rgb(207, 90, 140));
        assert_eq!(STALL_RED.to_string(), "#ee5046");
    }

    #[test]
    fn cpi_scale_is_logarithmic_fixed_and_grey_when_unknown() {
        assert_eq!(cpi_color(Some(0.25)), STALL_RED);
        assert_eq!(cpi_color(Some(0.01)), STALL_RED);
        assert_eq!(cpi_color(Some(1.0)), STALL_MID);
        assert_eq!(cpi_color(Some(4.0)), STALL_BLUE);
        assert_eq!(cpi_color(Some(1e9)), STALL_BLUE);
        // 0.5 is a quarter of the way (one octave of four): the stall colour of 25%.
        assert_eq!(cpi_position(0.5), Some(0.25));
        assert_eq!(cpi_color(Some(0.5)), stall_color(Some(0.25)));
        assert_eq!(cpi_position(2.0), Some(0.75));
        for unknown in [
            None,
            Some(0.0),
            Some(-1.0),
            Some(f64::NAN),
            Some(f64::INFINITY),
        ] {
            assert_eq!(cpi_color(unknown), UNKNOWN_GREY, "{unknown:?}");
        }
    }

    #[test]
    fn diff_scale_is_fixed_rooted_and_saturating() {
        assert_eq!(diff_color(0.0), DIFF_NEUTRAL);
        assert_eq!(diff_color(-0.0), DIFF_NEUTRAL);
        assert_eq!(diff_color(f64::NAN), DIFF_NEUTRAL);
        assert_eq!(diff_color(DIFF_SPAN), DIFF_GREW);
        assert_eq!(diff_color(-DIFF_SPAN), DIFF_SHRANK);
        assert_eq!(diff_color(0.9), DIFF_GREW);
        assert_eq!(diff_color(f64::NEG_INFINITY), DIFF_SHRANK);
        // +5 points: sqrt(5/20) = half way from neutral (226,226,222) to red (238,80,70).
        assert_eq!(diff_position(0.05), 0.5);
        assert_eq!(diff_color(0.05), Rgb(232, 153, 146));
        // -5 points: half way to blue (70,130,240).
        assert_eq!(diff_color(-0.05), Rgb(148, 178, 231));
        assert!((diff_position(-0.01) + 0.05f64.sqrt()).abs() < 1e-12);
        // Monotonic in the change.
        let reds: Vec<u8> = (0..=20)
            .map(|i| diff_color(f64::from(i) / 100.0).1)
            .collect();
        assert!(reds.windows(2).all(|w| w[0] >= w[1]), "{reds:?}");
    }

    #[test]
    fn warm_colors_are_fixed_and_warm() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(warm_color("main"), warm_color("main"));
        assert_ne!(warm_color("main"), warm_color("mainx"));
        for name in ["main", "foo", "bar", "std::vector<int>::push_back", ""] {
            let Rgb(r, g, b) = warm_color(name);
            assert!(r >= 210 && (70..=210).contains(&g) && (20..=70).contains(&b));
        }
    }
}
