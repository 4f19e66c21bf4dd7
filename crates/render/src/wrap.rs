//! Lines of text that run across the image (title, statistics line, subtitle, headings)
//! made to fit its width: broken after their ` · ` separators, else at spaces, else anywhere,
//! into at most as many lines as the block allows, the last one cut with `..` when the text
//! still does not fit. A block that was cut carries the whole text in a tooltip.
//!
//! Widths are estimated, not measured (the SVG is written without a font at hand), with
//! [`LINE_EM`]: wider than FlameGraph's 0.59 em of the frame labels ([`CHAR_WIDTH`]), which
//! are cut at their frame's edge anyway, because a line that runs to the image's edge must
//! not pass it in any common monospace font. `timeline.js` repeats [`wrap`]; keep the two in
//! step.
//!
//! [`CHAR_WIDTH`]: crate::text::CHAR_WIDTH

/// The advance of one character of the page's monospace font, in ems, as lines that must fit
/// the image are measured: DejaVu Sans Mono, Liberation Mono and Menlo advance 0.60 em
/// (DejaVu: 1233/2048), Consolas 0.55.
pub const LINE_EM: f64 = 0.61;

/// The estimated width in pixels of `text` in the monospace font at `font_px` pixels.
pub fn line_width(text: &str, font_px: f64) -> f64 {
    text.chars().count() as f64 * font_px * LINE_EM
}

/// A text broken into lines that fit: [`wrap`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Wrapped {
    pub(crate) lines: Vec<String>,
    /// Part of the text is not shown: the last line ends with `..`.
    pub(crate) cut: bool,
}

/// `text` in lines of at most `room` pixels at `font_px`, at most `max_lines` of them (at
/// least one, even when not three characters fit): whole ` · `-separated parts where they
/// fit (the separator ends its line), else words, else runs of characters; what does not
/// fit in `max_lines` is cut, the last line ending with `..`.
pub(crate) fn wrap(text: &str, room: f64, font_px: f64, max_lines: usize) -> Wrapped {
    let fit = ((room / (font_px * LINE_EM)).floor().max(3.0)) as usize;
    let len = |s: &str| s.chars().count();
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    // `piece` after the line's text and a space, when that fits.
    let joined = |line: &str, piece: &str| {
        let with = if line.is_empty() {
            len(piece)
        } else {
            len(line) + 1 + len(piece)
        };
        (with <= fit).then(|| match line.is_empty() {
            true => piece.to_string(),
            false => format!("{line} {piece}"),
        })
    };
    let parts: Vec<&str> = text.split(" · ").collect();
    for (k, part) in parts.iter().enumerate() {
        let part = if k + 1 < parts.len() {
            format!("{part} ·")
        } else {
            (*part).to_string()
        };
        if let Some(with) = joined(&line, &part) {
            line = with;
            continue;
        }
        if len(&part) <= fit {
            lines.push(std::mem::replace(&mut line, part));
            continue;
        }
        // A part longer than a line: its words, from where the line is.
        for word in part.split(' ') {
            if let Some(with) = joined(&line, word) {
                line = with;
                continue;
            }
            if !line.is_empty() {
                lines.push(std::mem::take(&mut line));
            }
            // A word longer than a line: runs of `fit` characters.
            let chars: Vec<char> = word.chars().collect();
            let mut runs = chars.chunks(fit).peekable();
            while let Some(run) = runs.next() {
                let run: String = run.iter().collect();
                if runs.peek().is_some() {
                    lines.push(run);
                } else {
                    line = run;
                }
            }
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    let max_lines = max_lines.max(1);
    if lines.len() <= max_lines {
        return Wrapped { lines, cut: false };
    }
    // The last line kept: as much of the rest as fits before the `..`.
    let rest = lines[max_lines - 1..].join(" ");
    lines.truncate(max_lines - 1);
    let kept: String = rest.chars().take(fit.saturating_sub(2)).collect();
    lines.push(format!("{}..", kept.trim_end()));
    Wrapped { lines, cut: true }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Room for exactly `chars` characters at 10 px.
    fn room(chars: usize) -> f64 {
        chars as f64 * 10.0 * LINE_EM + 0.01
    }

    fn lines(w: &Wrapped) -> Vec<&str> {
        w.lines.iter().map(String::as_str).collect()
    }

    #[test]
    fn a_line_that_fits_is_left_alone() {
        let w = wrap("cycles: 12 samples · stalled: 50.0%", room(80), 10.0, 3);
        assert_eq!(lines(&w), ["cycles: 12 samples · stalled: 50.0%"]);
        assert!(!w.cut);
        assert_eq!(lines(&wrap("", room(10), 10.0, 3)), [""]);
    }

    #[test]
    fn breaks_after_separators_before_spaces() {
        // A part that would fit the first line only in part goes to the next one whole.
        let w = wrap("aaa bbb · ccc ddd · eee", room(16), 10.0, 3);
        assert_eq!(lines(&w), ["aaa bbb ·", "ccc ddd · eee"]);
        let w = wrap("aaa bbb · ccc ddd · eee", room(10), 10.0, 3);
        assert_eq!(lines(&w), ["aaa bbb ·", "ccc ddd ·", "eee"]);
        // The lines, joined by spaces, are the text.
        assert_eq!(w.lines.join(" "), "aaa bbb · ccc ddd · eee");
        assert!(!w.cut);
    }

    #[test]
    fn long_parts_break_at_spaces_and_long_words_anywhere() {
        // A part too long for any line goes on from where the line is.
        let w = wrap("aa · bb cc dd ee ff", room(9), 10.0, 5);
        assert_eq!(lines(&w), ["aa · bb", "cc dd ee", "ff"]);
        let w = wrap("one two three four", room(9), 10.0, 5);
        assert_eq!(lines(&w), ["one two", "three", "four"]);
        let w = wrap("x abcdefghijkl y", room(5), 10.0, 5);
        assert_eq!(lines(&w), ["x", "abcde", "fghij", "kl y"]);
        let w = wrap("é€漢字abcdef", room(4), 10.0, 5);
        assert_eq!(lines(&w), ["é€漢字", "abcd", "ef"]);
    }

    #[test]
    fn too_many_lines_are_cut_with_two_dots() {
        let w = wrap("aaa · bbb · ccc · ddd", room(7), 10.0, 2);
        assert_eq!(lines(&w), ["aaa ·", "bbb ·.."]);
        assert!(w.cut);
        let w = wrap("abcdefghij", room(4), 10.0, 1);
        assert_eq!(lines(&w), ["ab.."]);
        assert!(w.cut);
        // Every line fits.
        for l in &w.lines {
            assert!(line_width(l, 10.0) <= room(4));
        }
    }
}
