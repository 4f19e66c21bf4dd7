//! Reading folded files: both forms, names, annotations, sums, every error, round trips.

use std::io::{self, Read};

use cpiflame_profile::{
    looks_folded, read_folded, write_folded, write_folded_pair, Count, EventColumn,
    FoldedErrorKind, Frame, FrameKind, Profile,
};

/// Stacks as (frame names with kinds, sample counts per column), sorted: an
/// order-independent view of a profile.
type View = Vec<(Vec<(String, FrameKind)>, Vec<u64>)>;

fn view(p: &Profile) -> View {
    let mut v: View = p
        .stacks
        .iter()
        .map(|s| {
            (
                s.frames
                    .iter()
                    .map(|&f| {
                        let f = p.frame(f);
                        assert!(f.module.is_empty());
                        (f.name.clone(), f.kind)
                    })
                    .collect(),
                s.counts.iter().map(|c| c.samples).collect(),
            )
        })
        .collect();
    v.sort();
    v
}

fn read(text: &str) -> Profile {
    read_folded(text.as_bytes(), "t.folded").unwrap()
}

fn error(text: &str) -> String {
    read_folded(text.as_bytes(), "before.folded")
        .unwrap_err()
        .to_string()
}

fn events(p: &Profile) -> Vec<&str> {
    p.events.iter().map(|e| e.name.as_str()).collect()
}

use FrameKind::{Inline, Jit, Kernel, Process, User};

fn frames(list: &[(&str, FrameKind)]) -> Vec<(String, FrameKind)> {
    list.iter().map(|&(n, k)| (n.to_string(), k)).collect()
}

#[test]
fn one_count_file() {
    let p = read("demo;main;foo 3\ndemo;main;bar 2\ndemo 1\n");
    assert_eq!(events(&p), ["samples"]);
    assert_eq!(
        view(&p),
        vec![
            (frames(&[("demo", Process)]), vec![1]),
            (
                frames(&[("demo", Process), ("main", User), ("bar", User)]),
                vec![2]
            ),
            (
                frames(&[("demo", Process), ("main", User), ("foo", User)]),
                vec![3]
            ),
        ]
    );
    // Periods are the sample counts: folded files have none.
    for s in &p.stacks {
        assert_eq!(s.counts[0].period, s.counts[0].samples);
    }
    assert_eq!(
        p.total(0),
        Count {
            samples: 6,
            period: 6
        }
    );
}

#[test]
fn two_count_file_is_stalls_then_cycles() {
    let p = read("demo;main;foo 1 4\ndemo;main;bar 0 3\ndemo;main;baz 2 0\n");
    assert_eq!(events(&p), ["stalls", "cycles"]);
    assert_eq!(
        view(&p),
        vec![
            (
                frames(&[("demo", Process), ("main", User), ("bar", User)]),
                vec![0, 3]
            ),
            (
                frames(&[("demo", Process), ("main", User), ("baz", User)]),
                vec![2, 0]
            ),
            (
                frames(&[("demo", Process), ("main", User), ("foo", User)]),
                vec![1, 4]
            ),
        ]
    );
    assert_eq!(p.total(0).period, 3);
    assert_eq!(p.total(1).period, 7);
}

#[test]
fn names_with_spaces_and_special_characters() {
    let text = "my app;(anonymous namespace)::f();operator()<int, char> const 5\n\
                my app;std::vector<T>::push_back(T&&) [clone .cold];[unknown] 2 3\n";
    // The second line has two trailing numbers, the first one: a mismatch, as documented.
    assert_eq!(
        read_folded(text.as_bytes(), "x").unwrap_err().to_string(),
        "x: line 2: 2 counts, but line 1 had 1"
    );
    let p = read(
        "my app;(anonymous namespace)::f();operator()<int, char> const 5\n\
         my app;std::vector<T>::push_back(T&&) [clone .cold];[unknown] 2\n\
         my app;__libc_start_main@GLIBC_2.34;λ::closure#0{{x}};0x7f00+0x1a\t\t7  \n\
         my app;a  b 1\n",
    );
    assert_eq!(
        view(&p),
        vec![
            (
                frames(&[
                    ("my app", Process),
                    ("(anonymous namespace)::f()", User),
                    ("operator()<int, char> const", User)
                ]),
                vec![5]
            ),
            (
                frames(&[
                    ("my app", Process),
                    ("__libc_start_main@GLIBC_2.34", User),
                    ("λ::closure#0{{x}}", User),
                    ("0x7f00+0x1a", User)
                ]),
                vec![7]
            ),
            (frames(&[("my app", Process), ("a  b", User)]), vec![1]),
            (
                frames(&[
                    ("my app", Process),
                    ("std::vector<T>::push_back(T&&) [clone .cold]", User),
                    ("[unknown]", User)
                ]),
                vec![2]
            ),
        ]
    );
}

#[test]
fn kernel_inline_and_jit_annotations() {
    let p = read(
        "worker_[k];main;helper_[i];do_syscall_64_[k];jitted_[j] 4\nworker_[k];main;helper 1\n",
    );
    assert_eq!(
        view(&p),
        vec![
            (
                frames(&[("worker_[k]", Process), ("main", User), ("helper", User)]),
                vec![1]
            ),
            (
                frames(&[
                    ("worker_[k]", Process),
                    ("main", User),
                    ("helper", Inline),
                    ("do_syscall_64", Kernel),
                    ("jitted", Jit),
                ]),
                vec![4]
            ),
        ]
    );
    // `helper` inline and `helper` called are two frames.
    assert_eq!(p.frames.iter().filter(|f| f.name == "helper").count(), 2);
}

#[test]
fn duplicate_stacks_add_up() {
    let p = read("a;b 2\na;c 1\na;b 5\n# comment\na;b 0\n");
    assert_eq!(
        view(&p),
        vec![
            (frames(&[("a", Process), ("b", User)]), vec![7]),
            (frames(&[("a", Process), ("c", User)]), vec![1]),
        ]
    );
    let p = read("a;b 2 1\na;b 3 0\na;b 0 4\n");
    assert_eq!(
        view(&p),
        vec![(frames(&[("a", Process), ("b", User)]), vec![5, 5])]
    );
    assert_eq!(
        p.stacks[0].counts,
        [
            Count {
                samples: 5,
                period: 5
            },
            Count {
                samples: 5,
                period: 5
            }
        ]
    );
}

#[test]
fn comments_blank_lines_crlf_and_whole_decimals() {
    let p = read("# cpiflame fold\r\n\r\n   \n  a;b 3.0\r\n\ta;b 2.\n# a;c 9\na;c 0\n");
    // `a;c 0` is a valid line that adds nothing.
    assert_eq!(
        view(&p),
        vec![(frames(&[("a", Process), ("b", User)]), vec![5])]
    );
    // A file whose lines are all zero is not an error, just empty.
    assert!(read("a;b 0\n").stacks.is_empty());
    // Largest count.
    assert_eq!(
        read("a 18446744073709551615").stacks[0].counts[0].samples,
        u64::MAX
    );
}

#[test]
fn error_messages_name_the_file_and_line() {
    let cases: &[(&str, &str)] = &[
        (
            "a;b 1\n\n# c\na;b 2\n\n\n\n\n\n\n\na;b abc\n",
            "before.folded: line 12: expected a count after the stack, found \"abc\"",
        ),
        (
            "a;b 1\na;b 2\na;b 3 4\n",
            "before.folded: line 3: 2 counts, but line 1 had 1",
        ),
        (
            "# two counts\na;b 1 2\na;c 3\n",
            "before.folded: line 3: 1 count, but line 2 had 2",
        ),
        (
            "a 1\n\n\n\n\n\n   12  \n",
            "before.folded: line 7: empty stack",
        ),
        ("a 1 2\n7 3\n", "before.folded: line 2: empty stack"),
        (
            "a 1\na 2\na 3\na 4\na 5\na 6\na 7\na 8\na;b 99999999999999999999\n",
            "before.folded: line 9: count 99999999999999999999 does not fit in 64 bits",
        ),
        (
            "a;b 1 18446744073709551616\n",
            "before.folded: line 1: count 18446744073709551616 does not fit in 64 bits",
        ),
        ("a;b -3\n", "before.folded: line 1: count -3 is negative"),
        ("a;b -3 4\n", "before.folded: line 1: count -3 is negative"),
        (
            "a;b 1.5\n",
            "before.folded: line 1: count 1.5 is not a whole number",
        ),
        (
            "a;b 0x10\n",
            "before.folded: line 1: expected a count after the stack, found \"0x10\"",
        ),
        (
            "a;b +1\n",
            "before.folded: line 1: expected a count after the stack, found \"+1\"",
        ),
        (
            "a;b 1\nmain;foo\n",
            "before.folded: line 2: no count after the stack (expected \"frame;frame COUNT\")",
        ),
        (
            "a;;b 1\n",
            "before.folded: line 1: empty frame name (frame 2 of the stack)",
        ),
        (
            "a;b; 1\n",
            "before.folded: line 1: empty frame name (frame 3 of the stack)",
        ),
        (
            ";b 1\n",
            "before.folded: line 1: empty frame name (frame 1 of the stack)",
        ),
        (
            "a;_[k] 1\n",
            "before.folded: line 1: empty frame name (frame 2 of the stack)",
        ),
        (
            // Found by fuzzing: a name of whitespace cannot be written back.
            "a; _[k] 1\n",
            "before.folded: line 1: empty frame name (frame 2 of the stack)",
        ),
        (
            "a;\t;b 1\n",
            "before.folded: line 1: empty frame name (frame 2 of the stack)",
        ),
        (
            "a 18446744073709551615\nb 1\n",
            "before.folded: line 2: the samples counts of the file add up to more than 64 bits",
        ),
        (
            "a 1 18446744073709551615\na 1 1\n",
            "before.folded: line 2: the cycles counts of the file add up to more than 64 bits",
        ),
        ("", "before.folded: no stacks"),
        ("# nothing\n\n  \n", "before.folded: no stacks"),
    ];
    for (text, message) in cases {
        assert_eq!(&error(text), message, "input {text:?}");
    }
    let e = read_folded(&b"a;b 1\na;\xff 1\n"[..], "x.folded").unwrap_err();
    assert_eq!(e.to_string(), "x.folded: line 2: not valid UTF-8");
    assert_eq!(e.line, 2);
    assert_eq!(e.source, "x.folded");
    assert!(matches!(e.kind, FoldedErrorKind::NotUtf8));
}

/// Yields `data`, then fails.
struct Failing {
    data: &'static [u8],
}

impl Read for Failing {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.data.is_empty() {
            return Err(io::Error::other("disk on fire"));
        }
        let n = buf.len().min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

#[test]
fn read_errors_carry_the_line_and_the_cause() {
    let input = io::BufReader::new(Failing {
        data: b"a;b 1\na;c 2\n",
    });
    let e = read_folded(input, "pipe").unwrap_err();
    assert_eq!(e.to_string(), "pipe: line 3: read failed: disk on fire");
    assert!(std::error::Error::source(&e).is_some());
}

fn frame(name: &str, kind: FrameKind) -> Frame {
    Frame {
        name: name.into(),
        module: "libx.so".into(),
        kind,
    }
}

#[test]
fn round_trip_through_write_folded_pair_and_write_folded() {
    let mut p = Profile::new(vec![
        EventColumn {
            name: "resource_stalls_any".into(),
        },
        EventColumn {
            name: "cpu_clk_unhalted".into(),
        },
    ]);
    let app = p.intern(frame("app", Process));
    let main = p.intern(frame("main", User));
    let op = p.intern(frame("operator()(int) const", User));
    let anon = p.intern(frame("(anonymous namespace)::load", User));
    // Kinds are written as `_[k]` / `_[i]` / `_[j]` and read back.
    let inlined = p.intern(frame("helper", Inline));
    let syscall = p.intern(frame("do_syscall_64", Kernel));
    let jitted = p.intern(frame("LazyCompile:~fib", Jit));
    let add = |p: &mut Profile, stack: &[u32], event: usize, samples: u64| {
        p.add(
            stack,
            event,
            Count {
                samples,
                period: samples * 2_000_003,
            },
        )
    };
    add(&mut p, &[app, main, op], 1, 7);
    add(&mut p, &[app, main, op], 0, 2);
    add(&mut p, &[app, main, anon], 1, 5);
    add(&mut p, &[app, main, anon, op], 0, 4);
    add(&mut p, &[app, main], 1, 1);
    add(&mut p, &[app, main, inlined, syscall], 1, 3);
    add(&mut p, &[app, main, inlined], 0, 1);
    add(&mut p, &[app, main, jitted], 1, 2);
    p.sort();

    let mut text = Vec::new();
    write_folded_pair(&p, 0, 1, &mut text).unwrap();
    let back = read_folded(&text[..], "pair").unwrap();
    assert_eq!(events(&back), ["stalls", "cycles"]);
    // Same stacks, same sample counts; names and kinds kept (modules are not in the format).
    let expected: View = {
        let mut v: View = p
            .stacks
            .iter()
            .map(|s| {
                (
                    s.frames
                        .iter()
                        .map(|&f| (p.frame(f).name.clone(), p.frame(f).kind))
                        .collect(),
                    s.counts.iter().map(|c| c.samples).collect(),
                )
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(view(&back), expected);
    back.stacks
        .iter()
        .flat_map(|s| &s.counts)
        .for_each(|c| assert_eq!(c.period, c.samples));

    // Written again, the same bytes.
    let mut back = back;
    back.sort();
    let mut again = Vec::new();
    write_folded_pair(&back, 0, 1, &mut again).unwrap();
    assert_eq!(
        String::from_utf8(again).unwrap(),
        String::from_utf8(text).unwrap()
    );

    // One column.
    let mut one = Vec::new();
    write_folded(&p, 1, &mut one).unwrap();
    let back = read_folded(&one[..], "one").unwrap();
    assert_eq!(events(&back), ["samples"]);
    let mut want: Vec<(Vec<String>, u64)> = p
        .stacks
        .iter()
        .filter(|s| s.counts[1].samples > 0)
        .map(|s| {
            (
                s.frames.iter().map(|&f| p.frame(f).name.clone()).collect(),
                s.counts[1].samples,
            )
        })
        .collect();
    want.sort();
    let got: Vec<(Vec<String>, u64)> = view(&back)
        .into_iter()
        .map(|(f, c)| (f.into_iter().map(|(n, _)| n).collect(), c[0]))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn looks_folded_tells_text_from_perf_data() {
    assert!(looks_folded(b"demo;main;foo 12\ndemo;main 3\n"));
    assert!(looks_folded(b"# comment\n\ndemo;main;foo 1 2\n"));
    assert!(looks_folded(b"demo;main;foo 12\r\n"));
    // Only the start of a long first line.
    assert!(looks_folded(
        b"demo;main;std::vector<int>::push_back(int&&);ope"
    ));
    // A UTF-8 character cut off at the end of the buffer.
    let cut = "demo;λ".as_bytes();
    assert!(looks_folded(&cut[..cut.len() - 1]));
    assert!(!looks_folded(b"PERFILE2\x68\x00\x00\x00\x00\x00\x00\x00"));
    // perf.data headers hold NUL bytes: not text. (Which kind an input is, magic numbers
    // first, is cpiflame_perf_data::InputKind::detect's decision, tested there.)
    assert!(!looks_folded(b"PERFFILE\x68\x00\x00\x00\x00\x00\x00\x00"));
    assert!(!looks_folded(b""));
    assert!(!looks_folded(b"\x7fELF\x02\x01\x01\x00"));
    assert!(!looks_folded(b"a;b \xff\xfe 1\n"));
    assert!(!looks_folded(b"<svg version=\"1.1\">\n<g>\n"));
    assert!(!looks_folded(b"12\n"));
}

#[test]
fn mangled_input_gives_errors_not_panics() {
    let seed: &[u8] =
        "# c\napp;main;operator() const_[i];f_[k] 12 3\r\napp;x 0 18446744073709551615\n\
                       app;λ;b 1.0 2\n"
            .as_bytes();
    let alphabet = b" \t\n\r;#-.0123456789_[]kiaxyz\xff\xce";
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..20_000 {
        let mut bytes = seed.to_vec();
        for _ in 0..1 + next() % 4 {
            let at = (next() % (bytes.len() as u64 + 1)) as usize;
            let b = alphabet[(next() % alphabet.len() as u64) as usize];
            match next() % 3 {
                0 if at < bytes.len() => bytes[at] = b,
                1 if at < bytes.len() => {
                    bytes.remove(at);
                }
                _ => bytes.insert(at, b),
            }
        }
        // Every error names the source; every profile has consistent columns.
        match read_folded(&bytes[..], "m") {
            Ok(p) => {
                assert!(p.stacks.iter().all(|s| s.counts.len() == p.events.len()));
                assert!(p.frames.iter().all(|f| !f.name.is_empty()));
            }
            Err(e) => assert!(e.to_string().starts_with("m: "), "{e}"),
        }
        let _ = looks_folded(&bytes);
    }
}

#[test]
fn a_columns_comment_names_the_counts() {
    // What `cpiflame fold` writes for a cycles+instructions recording.
    let p = read("# columns: instructions cycles\napp;fast 16 4\napp;slow 1 8\n");
    assert_eq!(events(&p), ["instructions", "cycles"]);
    // Only before the first stack, and only when it names as many columns as there are.
    let late = read("app;fast 16 4\n# columns: instructions cycles\napp;slow 1 8\n");
    assert_eq!(events(&late), ["stalls", "cycles"]);
    let wrong = read("# columns: instructions\napp;fast 16 4\n");
    assert_eq!(events(&wrong), ["stalls", "cycles"]);
    let one = read("# columns: cpu-clock\napp;fast 16\n");
    assert_eq!(events(&one), ["cpu-clock"]);
}

#[test]
fn a_columns_comment_of_more_than_two_names_makes_the_wide_form() {
    // A top-down group as perf names its events: every line has that many counts.
    let p = read(
        "# columns: slots cycles topdown-retiring topdown-be-bound\n\
         app;f 1000 250 600 400\napp;g 10 20 30 0\napp;f 1 2 3 4\n",
    );
    assert_eq!(
        events(&p),
        ["slots", "cycles", "topdown-retiring", "topdown-be-bound"]
    );
    let f = p
        .stacks
        .iter()
        .find(|s| s.frames.len() == 2 && p.frame(s.frames[1]).name == "f");
    let counts: Vec<u64> = f.unwrap().counts.iter().map(|c| c.period).collect();
    assert_eq!(counts, [1001, 252, 603, 404]);
    // A frame name with spaces stays the stack's: only the last four tokens are counts.
    let spaced = read("# columns: a b c\napp;operator() const 1 2 3\n");
    assert_eq!(p_frame_names(&spaced), ["app", "operator() const"]);
    // Too few counts on a line: its line and the token that is no count.
    assert_eq!(
        error("# columns: a b c\napp;f 1 2 3\napp;g 1 2\n"),
        "before.folded: line 3: expected a count after the stack, found \"app;g\""
    );
    assert_eq!(
        error("# columns: a b c\n1 2 3\n"),
        "before.folded: line 2: empty stack"
    );
}

fn p_frame_names(p: &Profile) -> Vec<&str> {
    p.frames.iter().map(|f| f.name.as_str()).collect()
}
