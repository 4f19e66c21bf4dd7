//! `diff --fail-above`: the threshold a CI job sets on how much a frame's share of the
//! total may grow between two runs, and the frames above it.

use cpiflame_profile::FrameDiff;

/// A `--fail-above` value that is not a number of percentage points.
#[derive(Debug, thiserror::Error)]
#[error("--fail-above {0}: expected percentage points, e.g. 5 or 5%")]
pub struct GateError(pub String);

/// `5`, `5%`, `2.5` → percentage points.
pub fn parse_fail_above(text: &str) -> Result<f64, GateError> {
    text.trim()
        .trim_end_matches('%')
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| GateError(text.to_string()))
}

/// One line for each of the first ten frames whose share grew by more than `limit` points
/// (`diffs` in their order); empty when none did.
pub fn grown_above(diffs: &[FrameDiff], limit: f64) -> Vec<String> {
    diffs
        .iter()
        .filter(|d| d.delta_points > limit)
        .take(10)
        .map(|d| {
            format!(
                "{} grew by {:.2} points ({:.2}% → {:.2}%), above --fail-above {limit}",
                d.name,
                d.delta_points,
                d.before_total_share * 100.0,
                d.after_total_share * 100.0
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_with_or_without_a_percent_sign() {
        assert_eq!(parse_fail_above("5").unwrap(), 5.0);
        assert_eq!(parse_fail_above(" 2.5% ").unwrap(), 2.5);
        for bad in ["-1", "x", "inf", ""] {
            assert_eq!(
                parse_fail_above(bad).unwrap_err().to_string(),
                format!("--fail-above {bad}: expected percentage points, e.g. 5 or 5%")
            );
        }
    }
}
