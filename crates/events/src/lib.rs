//! Events: what the stall and cycle events are on each CPU (`shared/EVENTS.md`), perf's names
//! for generic events, and which event of a recording plays which role in a CPI flame graph.
//!
//! Pure tables and functions: nothing here opens an event or reads a file.

mod names;
mod roles;

pub use names::{default_name, hardware_name, software_name};
pub use roles::{detect_roles, role_of, Arch, EventRef, Role, Roles};
