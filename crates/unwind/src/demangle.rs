//! Demangling of Rust (legacy and v0) and C++ names, as perf shows them: Rust without the
//! trailing hash, C++ with parameter lists.

/// The demangled form of `name`, or `name` itself when it is not a mangled name.
pub fn demangle(name: &str) -> String {
    if let Ok(d) = rustc_demangle::try_demangle(name) {
        // `{:#}` leaves out the `::h0123abcd` hash of legacy Rust names.
        return format!("{d:#}");
    }
    if name.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(name) {
            if let Ok(s) = sym.demangle() {
                return s;
            }
        }
    }
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::demangle;

    #[test]
    fn demangles_rust_legacy_v0_and_cpp() {
        assert_eq!(
            demangle("_ZN13rust_workload7recurse17h0123456789abcdefE"),
            "rust_workload::recurse"
        );
        assert_eq!(
            demangle("_RNvCs1234_13rust_workload7recurse"),
            "rust_workload::recurse"
        );
        assert_eq!(demangle("_ZN2ns5Shape4areaEv"), "ns::Shape::area()");
        assert_eq!(
            demangle("_Z5sum_tIiEvPKT_m"),
            "void sum_t<int>(int const*, unsigned long)"
        );
        assert_eq!(demangle("main"), "main");
    }
}
