//! The shared library's SONAME: the name it is installed and linked under
//! (`libcpiflame_markers.so.0`, scripts/install-markers-c.sh), not cargo's file name.

fn main() {
    let major = env!("CARGO_PKG_VERSION_MAJOR");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcpiflame_markers.so.{major}");
}
