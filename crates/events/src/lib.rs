//! Event encodings and roles.
