//! Demangling of Rust (legacy and v0) and C++ names, as perf shows them: Rust without the
//! trailing hash, C++ without parameter lists and return types (so overloads share a frame,
//! as in `perf script` and stackcollapse-perf output).
//!
//! C++ names go to the system's demangler, libstdc++'s `__cxa_demangle` (libiberty's, the
//! code `c++filt` and perf run), loaded at run time so that nothing links libstdc++; its full
//! form (return type and parameters included) is cut to the name by [`strip_signature`].
//! `cpp_demangle` serves where libstdc++ is not installed or refuses a name; it refuses some
//! real symbols itself (e.g. libstdc++'s `std::__relocate_a_1<double, double>`, whose return
//! type uses `sr` with a template argument) and prints others differently.

use std::ffi::{c_char, c_int, CStr, CString};
use std::sync::OnceLock;

/// The demangled form of `name`, or `name` itself when it is not a mangled name.
pub fn demangle(name: &str) -> String {
    let rust = rustc_demangle::try_demangle(name).ok().map(|d| {
        // `{:#}` leaves out the `::h0123abcd` hash of legacy Rust names.
        let short = format!("{d:#}");
        let has_hash = short.len() != format!("{d}").len();
        (short, has_hash || !name.starts_with("_Z"))
    });
    match rust {
        // v0 (`_R`) names, and legacy ones with their hash, are Rust's alone.
        Some((short, true)) => short,
        // A legacy-looking name without a hash (`_ZN12_GLOBAL__N_14dataE`) is as likely a
        // C++ data symbol, which the C++ demanglers name better (`(anonymous namespace)`).
        Some((short, false)) => demangle_cxx(name).unwrap_or(short),
        None if name.starts_with("_Z") => demangle_cxx(name).unwrap_or_else(|| name.to_string()),
        None => name.to_string(),
    }
}

/// The C++ name of `name` without parameters and return type, if it is one. The system's
/// demangler first: it is the code c++filt and perf run, and cpp_demangle differs from it
/// on hundreds of libstdc++'s names (`std::basic_istream<char, std::char_traits<char> >`
/// for `std::istream`) besides those it refuses. cpp_demangle where libstdc++ is missing.
fn demangle_cxx(name: &str) -> Option<String> {
    // Each back-reference (`S_`, `S3_`, `T_`) repeats an earlier part of the name, so a short
    // name that nests them expands exponentially (423 bytes gave 49 MB from
    // __cxa_demangle, which cannot be told to stop). Names with many go to cpp_demangle,
    // whose output is capped; real ones have few (libstdc++: at most 7, libLLVM-14: 40).
    if back_references(name) > MAX_CXA_BACK_REFERENCES {
        return demangle_cpp(name);
    }
    match cxa_demangle(name) {
        Some(full) => Some(strip_signature(&full)),
        None => demangle_cpp(name),
    }
}

/// Above this many back-references a name is not given to `__cxa_demangle` (see
/// [`demangle_cxx`]): each pair can double the output, so this bounds it to a few thousand
/// times the name's length.
const MAX_CXA_BACK_REFERENCES: usize = 24;

/// The longest demangled name kept; a longer one stays mangled.
const MAX_DEMANGLED: usize = 64 * 1024;

/// Substitution (`S[seq-id]_`) and template-parameter (`T[seq-id]_`) references in a
/// mangled name. A source name containing such letters counts too: an overestimate only
/// sends the name to the capped demangler.
fn back_references(name: &str) -> usize {
    let b = name.as_bytes();
    let mut n = 0;
    for (i, &c) in b.iter().enumerate() {
        if c == b'S' || c == b'T' {
            let rest = &b[i + 1..];
            let id = rest
                .iter()
                .take_while(|c| c.is_ascii_digit() || c.is_ascii_uppercase())
                .count();
            if rest.get(id) == Some(&b'_') {
                n += 1;
            }
        }
    }
    n
}

/// `cpp_demangle`'s form of `name` without parameters and return type; `None` when it
/// refuses the name or the output would exceed [`MAX_DEMANGLED`].
fn demangle_cpp(name: &str) -> Option<String> {
    let sym = cpp_demangle::Symbol::new(name).ok()?;
    let options = cpp_demangle::DemangleOptions::new()
        .no_params()
        .no_return_type();
    let mut out = Capped(String::new());
    sym.structured_demangle(&mut out, &options).ok()?;
    Some(strip_qualifiers(&out.0).to_string())
}

/// A string that refuses to grow past [`MAX_DEMANGLED`], which stops the demangler.
struct Capped(String);

impl cpp_demangle::DemangleWrite for Capped {
    fn write_string(&mut self, s: &str) -> std::fmt::Result {
        if self.0.len() + s.len() > MAX_DEMANGLED {
            return Err(std::fmt::Error);
        }
        self.0.push_str(s);
        Ok(())
    }
}

/// Without its parameter list, a method's cv/ref qualifiers (`operator() const`) mean
/// nothing to a reader; perf leaves them out too.
fn strip_qualifiers(mut s: &str) -> &str {
    while let Some(rest) = [" const", " volatile", " &&", " &"]
        .iter()
        .find_map(|q| s.strip_suffix(q))
    {
        s = rest;
    }
    s
}

/// `char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status)`.
type CxaDemangle =
    unsafe extern "C" fn(*const c_char, *mut c_char, *mut usize, *mut c_int) -> *mut c_char;

/// libstdc++'s `__cxa_demangle`, looked up once; `None` when libstdc++ is not installed.
fn cxa_demangle_fn() -> Option<CxaDemangle> {
    static FN: OnceLock<Option<CxaDemangle>> = OnceLock::new();
    *FN.get_or_init(|| {
        // SAFETY: dlopen and dlsym are given NUL-terminated names; the handle is kept open
        // for the life of the process (never dlclosed), so the function stays valid. The
        // symbol has the C signature of `CxaDemangle` (the Itanium C++ ABI's).
        unsafe {
            let handle = libc::dlopen(
                c"libstdc++.so.6".as_ptr(),
                libc::RTLD_NOW | libc::RTLD_LOCAL,
            );
            if handle.is_null() {
                return None;
            }
            let sym = libc::dlsym(handle, c"__cxa_demangle".as_ptr());
            if sym.is_null() {
                return None;
            }
            Some(std::mem::transmute::<*mut libc::c_void, CxaDemangle>(sym))
        }
    })
}

/// Names longer than this go to cpp_demangle instead of `__cxa_demangle`, which puts tables
/// of about 72 bytes per character of the name on the stack (and recurses as deep as the
/// name nests); symbol tables are input. The longest of libLLVM-15's 39,000 C++ names has
/// 613 characters.
const MAX_CXA_NAME: usize = 4096;

/// The system demangler's full form of `name` (`c++filt`'s output), if it demangles it.
fn cxa_demangle(name: &str) -> Option<String> {
    if name.len() > MAX_CXA_NAME {
        return None;
    }
    let demangle = cxa_demangle_fn()?;
    let mangled = CString::new(name).ok()?;
    let mut status: c_int = 0;
    // SAFETY: `mangled` is NUL-terminated; with a null buffer and length the function
    // allocates the result with malloc (freed below with free), and returns null on error.
    unsafe {
        let out = demangle(
            mangled.as_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &mut status,
        );
        if out.is_null() {
            return None;
        }
        let s = CStr::from_ptr(out).to_string_lossy().into_owned();
        libc::free(out.cast());
        (status == 0).then_some(s)
    }
}

/// The name alone of a demangled C++ signature as `c++filt` prints it: `ret ns::f<T>(args)
/// const [clone .cold]` becomes `ns::f<T>`, as `cpp_demangle` prints it without parameters
/// and return type. GCC's clone suffixes (` [clone .constprop.0]`) go too: a function split
/// or specialised by the compiler is shown as the function.
pub fn strip_signature(full: &str) -> String {
    // Clone suffixes come last: ` [clone .isra.0] [clone .cold]`.
    let body = full.find(" [clone ").map_or(full, |i| &full[..i]);
    // Special names keep their words (`vtable for `, `non-virtual thunk to `): the part
    // after them is the signature.
    let mut prefix_len = 0;
    while let Some(len) = special_prefix(&body[prefix_len..]) {
        prefix_len += len;
    }
    let (prefix, body) = body.split_at(prefix_len);
    let body = strip_qualifiers(body);
    // The parameter list: the parenthesised group that ends the signature.
    let name = match body.strip_suffix(')').and_then(|_| matching_open(body)) {
        Some(open) => &body[..open],
        None => body,
    };
    let name = strip_qualifiers(name);
    let name = &name[return_type_end(name)..];
    format!("{prefix}{name}")
}

/// The length of the special-name words `s` starts with (`vtable for `, ...), if any.
fn special_prefix(s: &str) -> Option<usize> {
    const PREFIXES: [&str; 17] = [
        "vtable for ",
        "VTT for ",
        "construction vtable for ",
        "typeinfo for ",
        "typeinfo name for ",
        "typeinfo fn for ",
        "guard variable for ",
        "TLS init function for ",
        "TLS wrapper function for ",
        "hidden alias for ",
        "transaction clone for ",
        "non-transaction clone for ",
        "non-virtual thunk to ",
        "virtual thunk to ",
        "covariant return thunk to ",
        "java Class for ",
        "template parameter object for ",
    ];
    if let Some(p) = PREFIXES.iter().find(|p| s.starts_with(**p)) {
        return Some(p.len());
    }
    // `reference temporary #0 for `
    let rest = s.strip_prefix("reference temporary #")?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    rest[digits..]
        .starts_with(" for ")
        .then_some("reference temporary #".len() + digits + " for ".len())
}

/// The index of the `(` that the final `)` of `s` closes.
fn matching_open(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in s.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Where the name starts after a template function's return type (`int f<int>`,
/// `std::enable_if<..>::type std::g<T>`): after the last space outside brackets that comes
/// before any `operator` (whose name may hold spaces and brackets: `operator new`,
/// `operator<`); 0 when there is no return type.
fn return_type_end(s: &str) -> usize {
    let bytes = s.as_bytes();
    let mut depth = 0i32;
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let at_word = i == 0 || matches!(bytes[i - 1], b' ' | b':' | b'(' | b'<' | b',');
        if depth == 0 && at_word && s[i..].starts_with("operator") {
            let after = bytes.get(i + 8).copied();
            if !after.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_') {
                break;
            }
        }
        match bytes[i] {
            b'<' | b'(' | b'[' | b'{' => depth += 1,
            b'>' | b')' | b']' | b'}' => depth -= 1,
            b' ' if depth == 0 => start = i + 1,
            _ => {}
        }
        i += 1;
    }
    start
}

#[cfg(test)]
mod tests {
    use super::{
        back_references, cxa_demangle, demangle, strip_signature, MAX_CXA_BACK_REFERENCES,
        MAX_DEMANGLED,
    };

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

    #[test]
    fn signatures_are_cut_to_the_name() {
        for (full, name) in [
            ("ns::Shape::area() const", "ns::Shape::area"),
            ("void sum_t<int>(int const*, unsigned long)", "sum_t<int>"),
            (
                "main::{lambda(unsigned long)#1}::operator()(unsigned long) const",
                "main::{lambda(unsigned long)#1}::operator()",
            ),
            (
                "std::enable_if<std::__is_bitwise_relocatable<double, void>::value, double*>::type \
                 std::__relocate_a_1<double, double>(double*, double*, double*, std::allocator<double>&)",
                "std::__relocate_a_1<double, double>",
            ),
            ("bool operator< <int>(A<int> const&, A<int> const&)", "operator< <int>"),
            ("operator new(unsigned long)", "operator new"),
            ("A::operator unsigned long() const", "A::operator unsigned long"),
            ("f(int) [clone .isra.0] [clone .cold]", "f"),
            ("vtable for ns::Shape", "vtable for ns::Shape"),
            ("(anonymous namespace)::g(void (*)(int))", "(anonymous namespace)::g"),
        ] {
            assert_eq!(strip_signature(full), name, "{full}");
        }
    }

    #[test]
    fn what_cpp_demangle_refuses_the_system_demangler_names() {
        let mangled = "_ZSt14__relocate_a_1IddENSt9enable_ifIXsrSt24__is_bitwise_relocatableIT_vE5valueEPS2_E4typeES4_S4_S4_RSaIT0_E";
        if cxa_demangle("_Z1fv").is_none() {
            cpiflame_testkit::unavailable("libstdc++.so.6 cannot be loaded");
            return;
        }
        assert_eq!(demangle(mangled), "std::__relocate_a_1<double, double>");
        assert_eq!(cxa_demangle("_Znot a name"), None);
    }

    #[test]
    fn long_and_deep_names_neither_crash_nor_hang() {
        // Deep nesting just under the size that still goes to __cxa_demangle, then far over
        // it (cpp_demangle, with its own recursion limit).
        for depth in [400, 20_000] {
            let name = format!("_Z1fI{}i{}Ev", "PN1aIS_".repeat(depth), "EE".repeat(depth));
            let _ = demangle(&name);
        }
        let flat = format!("_ZN{}E", "1a".repeat(50_000));
        assert!(demangle(&flat).starts_with("a::a::"));
    }

    #[test]
    fn names_that_expand_exponentially_stay_bounded() {
        // 40 levels, each naming the previous substitution twice: __cxa_demangle gave 49 MB.
        let mut name = String::from("_Z1fI1aIiiE");
        for _ in 0..40 {
            name.push_str("S_I");
            name.push_str("S0_S0_E");
        }
        name.push_str("EvT_");
        assert!(back_references(&name) > MAX_CXA_BACK_REFERENCES);
        let start = std::time::Instant::now();
        let out = demangle(&name);
        assert!(out.len() <= MAX_DEMANGLED.max(name.len()), "{}", out.len());
        assert!(start.elapsed() < std::time::Duration::from_secs(10));
        // Real names stay with the system demangler.
        // (`St`, `Sa` are abbreviations, not references.)
        assert_eq!(back_references("_ZNSt6vectorIiSaIiEE9push_backERKi"), 0);
        assert_eq!(
            back_references(
                "_ZSt7getlineIcSt11char_traitsIcESaIcEERSt13basic_istreamIT_T0_ES7_RNSt7__cxx1112basic_stringIS4_S5_T1_EES4_"
            ),
            7
        );
    }
}
