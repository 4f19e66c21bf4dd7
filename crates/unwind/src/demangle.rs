//! Demangling of Rust (legacy and v0) and C++ names, as perf shows them: Rust without the
//! trailing hash, C++ without parameter lists and return types (so overloads share a frame,
//! as in `perf script` and stackcollapse-perf output).

/// The demangled form of `name`, or `name` itself when it is not a mangled name.
pub fn demangle(name: &str) -> String {
    if let Ok(d) = rustc_demangle::try_demangle(name) {
        // `{:#}` leaves out the `::h0123abcd` hash of legacy Rust names.
        return format!("{d:#}");
    }
    if name.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(name) {
            let options = cpp_demangle::DemangleOptions::new()
                .no_params()
                .no_return_type();
            if let Ok(mut s) = sym.demangle_with_options(&options) {
                // Without its parameter list, a method's cv/ref qualifiers (`operator() const`)
                // mean nothing to a reader; perf leaves them out too.
                while let Some(rest) = [" const", " volatile", " &&", " &"]
                    .iter()
                    .find_map(|q| s.strip_suffix(q))
                {
                    s = rest.to_string();
                }
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
        assert_eq!(demangle("_ZN2ns5Shape4areaEv"), "ns::Shape::area");
        assert_eq!(demangle("_Z5sum_tIiEvPKT_m"), "sum_t<int>");
        assert_eq!(
            demangle("_ZZ4mainENKUlmE_clEm"),
            "main::{lambda(unsigned long)#1}::operator()"
        );
        assert_eq!(demangle("main"), "main");
    }
}
