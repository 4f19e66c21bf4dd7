//! Records `argv[1..]` with cpu-clock and DWARF call chains into /tmp/smoke.data (a manual check).
use cpiflame_record::*;
fn main() {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let o = RecordOptions {
        events: vec![EventConfig {
            type_: 1,
            config: 0,
            config1: 0,
            config2: 0,
            name: "cpu-clock".into(),
            exclude_user: false,
            exclude_kernel: false,
            period: None,
        }],
        sampling: Sampling::Period(250_000),
        call_graph: CallGraph::Dwarf {
            stack_size: DEFAULT_STACK_SIZE,
        },
        target: Target::Command(argv),
        output: "/tmp/smoke.data".into(),
        duration: None,
        buffer_pages: 1024,
        status_line: true,
        cmdline: vec!["smoke".into()],
    };
    match record(&o) {
        Ok(r) => eprintln!("{r:?}"),
        Err(e) => eprintln!("error: {e}"),
    }
}
