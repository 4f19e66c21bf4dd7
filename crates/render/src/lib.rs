//! Rendering: folded profile to SVG.
