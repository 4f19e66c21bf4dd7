//! Unwinding and symbolization.
