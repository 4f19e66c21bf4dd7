//! The picture in the README (`docs/cpi-skylake-echo.svg`) is what the command docs/reading.md
//! gives to remake it draws today: the command is read from the page, run, and its SVG
//! compared byte for byte with the committed one (a change to the drawing that changes this
//! picture must remake it, as the page says).

use crate::support;

use std::process::Command;

use support::{repo_root, Dir};

/// The shell command after "Remade with:" in docs/reading.md, its line continuations joined.
fn remake_command(page: &str) -> String {
    let after = page
        .split_once("Remade with:")
        .expect("docs/reading.md: no 'Remade with:' before the picture's command")
        .1;
    let block = after
        .split_once("```sh\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .expect("docs/reading.md: no sh block after 'Remade with:'")
        .0;
    block.replace("\\\n", " ")
}

/// Shell words: whitespace-separated, double quotes kept together (all the command uses).
fn words(command: &str) -> Vec<String> {
    let (mut out, mut word, mut quoted, mut any) = (Vec::new(), String::new(), false, false);
    for c in command.chars() {
        match c {
            '"' => (quoted, any) = (!quoted, true),
            c if c.is_whitespace() && !quoted => {
                if any {
                    out.push(std::mem::take(&mut word));
                }
                any = false;
            }
            c => (word.push(c), any = true).1,
        }
    }
    assert!(!quoted, "unbalanced quotes in {command:?}");
    if any {
        out.push(word);
    }
    out
}

#[test]
fn the_readme_picture_is_what_its_documented_command_draws() {
    let root = repo_root();
    let page = std::fs::read_to_string(root.join("docs/reading.md")).unwrap();
    let argv = words(&remake_command(&page));
    assert_eq!(
        argv.first().map(String::as_str),
        Some("cpiflame"),
        "{argv:?}"
    );
    let output = argv
        .iter()
        .position(|w| w == "-o")
        .map(|i| argv[i + 1].clone())
        .expect("the command writes the picture with -o");
    assert_eq!(output, "docs/cpi-skylake-echo.svg");
    let dir = Dir::new("readme-picture");
    let drawn = dir.path("echo.svg");
    let args: Vec<&str> = argv[1..]
        .iter()
        .map(|w| {
            if *w == output {
                drawn.to_str().unwrap()
            } else {
                w
            }
        })
        .collect();
    let out = Command::new(env!("CARGO_BIN_EXE_cpiflame"))
        .args(&args)
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let committed = std::fs::read(root.join(&output)).unwrap();
    assert!(
        std::fs::read(&drawn).unwrap() == committed,
        "{output} is not what docs/reading.md's command draws today: remake it with that command"
    );
}

#[test]
fn shell_words_keep_quoted_titles_whole() {
    assert_eq!(
        words("cpiflame render a.data -o x.svg  --title \"A: b ({c,d}:u)\"\n"),
        [
            "cpiflame",
            "render",
            "a.data",
            "-o",
            "x.svg",
            "--title",
            "A: b ({c,d}:u)"
        ]
    );
}
