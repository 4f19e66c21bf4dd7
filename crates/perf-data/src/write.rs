//! Writing perf.data files.
