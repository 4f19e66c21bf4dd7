//! Small text helpers for the SVG writer: XML escaping, number formatting, label fitting.

use std::fmt;

/// Displays a string escaped for XML text and attribute values (both quote kinds).
///
/// Characters that XML 1.0 does not allow at all (most C0 controls, U+FFFE, U+FFFF) become
/// U+FFFD so that a stray byte in a symbol name cannot make the whole SVG unreadable.
pub(crate) struct Esc<'a>(pub(crate) &'a str);

impl fmt::Display for Esc<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.0;
        // Most names need nothing escaped: told by their bytes, without decoding characters
        // (0xEF starts U+FFFE and U+FFFF).
        if !s
            .bytes()
            .any(|b| matches!(b, b'&' | b'<' | b'>' | b'"' | b'\'' | 0..=0x1f | 0xef))
        {
            return f.write_str(s);
        }
        let mut run_start = 0;
        for (i, c) in s.char_indices() {
            let replacement = match c {
                '&' => "&amp;",
                '<' => "&lt;",
                '>' => "&gt;",
                '"' => "&quot;",
                '\'' => "&apos;",
                '\t' | '\n' | '\r' => continue,
                '\u{0}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}' => "\u{fffd}",
                _ => continue,
            };
            f.write_str(&s[run_start..i])?;
            f.write_str(replacement)?;
            run_start = i + c.len_utf8();
        }
        f.write_str(&s[run_start..])
    }
}

/// Displays an integer with `,` between groups of three digits: `12,345`.
pub(crate) struct Thousands(pub(crate) u64);

impl fmt::Display for Thousands {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use fmt::Write as _;
        let digits = self.0.to_string();
        let len = digits.len();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (len - i) % 3 == 0 {
                f.write_char(',')?;
            }
            f.write_char(c)?;
        }
        Ok(())
    }
}

/// Pixels per character of the 12 px monospace label font (FlameGraph's 0.59 em estimate).
pub const CHAR_WIDTH: f64 = 12.0 * 0.59;
/// Horizontal padding between a frame's left edge and its label.
pub const LABEL_PAD: f64 = 3.0;

/// The label shown inside a frame `width` pixels wide: the whole name when it fits, else its
/// start followed by `..`, else nothing when not even three characters fit.
///
/// The embedded script repeats this computation after a zoom; keep the two in step.
pub(crate) fn fit_label(name: &str, width: f64) -> Label<'_> {
    let fit = ((width - 2.0 * LABEL_PAD) / CHAR_WIDTH).floor();
    if fit.is_nan() || fit < 3.0 {
        return Label::Empty;
    }
    let fit = fit as usize;
    // Find the byte offset of the (fit+1)-th character: if there is none, the name fits.
    match name.char_indices().nth(fit) {
        None => Label::Whole(name),
        Some(_) => {
            let cut = name
                .char_indices()
                .nth(fit - 2)
                .map_or(name.len(), |(i, _)| i);
            Label::Truncated(&name[..cut])
        }
    }
}

/// Like [`fit_label`], but keeps the *end* of the text, for call paths whose leaf matters
/// most: the whole text when it fits, else `..` followed by its end, else nothing.
pub(crate) fn fit_label_tail(text: &str, width: f64) -> Label<'_> {
    let fit = ((width - 2.0 * LABEL_PAD) / CHAR_WIDTH).floor();
    if fit.is_nan() || fit < 3.0 {
        return Label::Empty;
    }
    let fit = fit as usize;
    let chars = text.chars().count();
    if chars <= fit {
        return Label::Whole(text);
    }
    let skip = chars - (fit - 2);
    let cut = text.char_indices().nth(skip).map_or(text.len(), |(i, _)| i);
    Label::Tail(&text[cut..])
}

/// See [`fit_label`] and [`fit_label_tail`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Label<'a> {
    Empty,
    Whole(&'a str),
    /// The kept start of the name; `..` is to be written after it.
    Truncated(&'a str),
    /// The kept end of the text; `..` is to be written before it.
    Tail(&'a str),
}

impl fmt::Display for Label<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Label::Empty => Ok(()),
            Label::Whole(s) => Esc(s).fmt(f),
            Label::Truncated(s) => {
                Esc(s).fmt(f)?;
                f.write_str("..")
            }
            Label::Tail(s) => {
                f.write_str("..")?;
                Esc(s).fmt(f)
            }
        }
    }
}

/// Displays an event count (a summed sample period: cycles, instructions) with an SI prefix
/// and three significant digits (`950`, `12.3 k`, `2.50 G`), as counts of events are huge and
/// only their magnitude and first digits are read.
pub(crate) struct Events(pub(crate) u64);

impl fmt::Display for Events {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const PREFIXES: [&str; 6] = ["k", "M", "G", "T", "P", "E"];
        if self.0 < 1000 {
            return write!(f, "{}", self.0);
        }
        let mut v = self.0 as f64;
        let mut i = 0;
        while v >= 999.5 && i < PREFIXES.len() {
            v /= 1000.0;
            i += 1;
        }
        let decimals = if v >= 99.95 {
            0
        } else if v >= 9.995 {
            1
        } else {
            2
        };
        write!(
            f,
            "{} {}",
            Fixed(v, decimals),
            PREFIXES[i.saturating_sub(1)]
        )
    }
}

/// Displays `self.0` with `self.1` digits after the point, as `{:.N}` does (the exact
/// binary value rounded half to even), without the standard library's arbitrary-precision
/// fallback where it is not needed: a graph writes tens of thousands of such numbers.
pub(crate) struct Fixed(pub(crate) f64, pub(crate) usize);

impl fmt::Display for Fixed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SCALE: [f64; 4] = [1.0, 10.0, 100.0, 1000.0];
        let (v, decimals) = (self.0, self.1);
        // Not -0.0, which prints with its sign.
        if let Some(&scale) = SCALE.get(decimals).filter(|_| v.is_sign_positive()) {
            let scaled = v * scale;
            // Below 2^30 the product is within 2^-23 of the exact one, so unless it is that
            // close to a half, rounding it gives the digits the exact value rounds to.
            let tie = (scaled - scaled.floor() - 0.5).abs() <= 1e-6;
            if scaled < (1u64 << 30) as f64 && !tie {
                let n = scaled.round() as u64;
                let unit = scale as u64;
                return if decimals == 0 {
                    write!(f, "{n}")
                } else {
                    write!(f, "{}.{:0decimals$}", n / unit, n % unit)
                };
            }
        }
        write!(f, "{v:.decimals$}")
    }
}

/// Displays a ratio as a percentage with `decimals` digits, or `n/a` when there is none.
pub(crate) struct Percent(pub(crate) Option<f64>, pub(crate) usize);

impl fmt::Display for Percent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(r) if r.is_finite() => write!(f, "{}%", Fixed(r * 100.0, self.1)),
            _ => f.write_str("n/a"),
        }
    }
}

/// Displays a number with an explicit sign and `decimals` digits (`+15.00`, `-0.25`), or
/// without a sign when it rounds to zero (`0.00`), so that a tiny negative change never reads
/// `-0.00`.
pub(crate) struct Signed(pub(crate) f64, pub(crate) usize);

impl fmt::Display for Signed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = format!("{:.*}", self.1, self.0.abs());
        if text.bytes().all(|b| b == b'0' || b == b'.') {
            f.write_str(&text)
        } else if self.0 < 0.0 {
            write!(f, "-{text}")
        } else {
            write!(f, "+{text}")
        }
    }
}

/// What the weights of a statistics line are: `counts` for folded text's counts of events
/// (`Options::counts`), else `samples`.
pub(crate) fn weight_unit(counts: bool) -> &'static str {
    if counts {
        "counts"
    } else {
        "samples"
    }
}

/// `numerator / denominator`, or `None` when the denominator is zero.
pub(crate) fn ratio(numerator: u64, denominator: u64) -> Option<f64> {
    if denominator == 0 {
        None
    } else {
        Some(numerator as f64 / denominator as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Fixed` against the standard library's exact formatting: values of every magnitude
    /// the pictures use, halves and near-halves (where a shortcut would round wrongly),
    /// the signs and the values that are not numbers.
    #[test]
    fn fixed_prints_what_the_standard_formatting_prints() {
        let mut values = vec![
            0.0,
            -0.0,
            0.5,
            1.5,
            2.5,
            0.125,
            0.375,
            10.625,
            0.005,
            0.015,
            0.025,
            0.045,
            1e-300,
            99.95,
            99.949_999_999,
            9.995,
            1180.0,
            1e9,
            1e12,
            1073741823.5,
            f64::MAX,
            -1.25,
            -0.004,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN_POSITIVE,
        ];
        // A fixed sequence (an LCG) over many magnitudes, and every hundredth of a pixel
        // and of a percent around the halves.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..200_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let unit = (x >> 11) as f64 / (1u64 << 53) as f64;
            values.push(unit * [1.0, 100.0, 1200.0, 1e6, 2e9][(x % 5) as usize]);
        }
        for k in 0..200_000u32 {
            values.push(f64::from(k) / 1000.0 + 0.0005);
            values.push(f64::from(k) * 0.01 * 1180.0 / 7.0);
        }
        for v in values {
            for decimals in 0..5 {
                assert_eq!(
                    Fixed(v, decimals).to_string(),
                    format!("{v:.decimals$}"),
                    "{v:e} with {decimals} decimals"
                );
            }
        }
    }

    #[test]
    fn escapes_markup_quotes_and_forbidden_controls() {
        assert_eq!(
            Esc("a<b>&\"c\"'d'\u{1}\tok").to_string(),
            "a&lt;b&gt;&amp;&quot;c&quot;&apos;d&apos;\u{fffd}\tok"
        );
        assert_eq!(Esc("plain").to_string(), "plain");
        assert_eq!(Esc("").to_string(), "");
        assert_eq!(Esc("é<").to_string(), "é&lt;");
    }

    #[test]
    fn events_get_si_prefixes() {
        let cases = [
            (0, "0"),
            (999, "999"),
            (1000, "1.00 k"),
            (12_345, "12.3 k"),
            (999_499, "999 k"),
            (999_500, "1.00 M"),
            (2_500_000_000, "2.50 G"),
            (u64::MAX, "18.4 E"),
        ];
        for (n, text) in cases {
            assert_eq!(Events(n).to_string(), text);
        }
    }

    #[test]
    fn groups_thousands() {
        assert_eq!(Thousands(0).to_string(), "0");
        assert_eq!(Thousands(999).to_string(), "999");
        assert_eq!(Thousands(1000).to_string(), "1,000");
        assert_eq!(Thousands(12345).to_string(), "12,345");
        assert_eq!(Thousands(1234567).to_string(), "1,234,567");
        assert_eq!(
            Thousands(u64::MAX).to_string(),
            "18,446,744,073,709,551,615"
        );
    }

    #[test]
    fn labels_fit_or_are_cut_with_two_dots() {
        // 6 px padding; each character is 7.08 px.
        let w = |chars: f64| chars * CHAR_WIDTH + 2.0 * LABEL_PAD + 0.01;
        assert_eq!(fit_label("main", w(4.0)), Label::Whole("main"));
        assert_eq!(fit_label("main", w(3.0)), Label::Truncated("m"));
        assert_eq!(fit_label("main", w(2.0)), Label::Empty);
        assert_eq!(fit_label("ab", w(3.0)), Label::Whole("ab"));
        assert_eq!(fit_label("héllo_world", w(5.0)), Label::Truncated("hél"));
        assert_eq!(fit_label("a<b>c", w(4.0)).to_string(), "a&lt;..");
        assert_eq!(fit_label("x", f64::NAN), Label::Empty);
    }

    #[test]
    fn tail_labels_keep_the_end() {
        let w = |chars: f64| chars * CHAR_WIDTH + 2.0 * LABEL_PAD + 0.01;
        assert_eq!(fit_label_tail("app;main", w(8.0)), Label::Whole("app;main"));
        assert_eq!(fit_label_tail("app;main", w(6.0)), Label::Tail("main"));
        assert_eq!(fit_label_tail("app;main", w(6.0)).to_string(), "..main");
        assert_eq!(fit_label_tail("a;é<b", w(4.0)).to_string(), "..&lt;b");
        assert_eq!(fit_label_tail("app;main", w(2.0)), Label::Empty);
    }

    #[test]
    fn signed_numbers() {
        assert_eq!(Signed(15.0, 2).to_string(), "+15.00");
        assert_eq!(Signed(-3.254, 2).to_string(), "-3.25");
        assert_eq!(Signed(-0.001, 2).to_string(), "0.00");
        assert_eq!(Signed(0.0, 1).to_string(), "0.0");
        assert_eq!(Signed(60.0, 1).to_string(), "+60.0");
    }

    #[test]
    fn percentages() {
        assert_eq!(Percent(Some(0.382), 1).to_string(), "38.2%");
        assert_eq!(Percent(Some(1.5), 2).to_string(), "150.00%");
        assert_eq!(Percent(None, 1).to_string(), "n/a");
        assert_eq!(ratio(1, 0), None);
        assert_eq!(ratio(1, 4), Some(0.25));
    }
}
