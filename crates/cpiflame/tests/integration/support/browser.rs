//! Headless Chromium (Debian's `chromium`) driven over the DevTools protocol on a pipe
//! (`--remote-debugging-pipe`: the browser reads commands on its file descriptor 3 and writes
//! replies and events on 4, each a JSON message ended by a NUL byte), so that a test gives a
//! page input the way a mouse or keyboard does (`Input.dispatchMouseEvent`,
//! `Input.dispatchKeyEvent`: the browser's input pipeline, hit testing included, and events
//! whose `isTrusted` is true) and reads what the page drew (`Runtime.evaluate`).
//!
//! Every wait has a deadline and panics saying what it waited for, with the end of the
//! browser's stderr. Dropping a [`Browser`] closes it (killed if it does not exit): declare
//! it after the [`Dir`] that holds its profile, so that it is dropped first.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::Dir;

/// How long one command's reply, or a state polled for, may take: generous, CI machines are
/// busy.
const PATIENCE: Duration = Duration::from_secs(60);

/// The bit of `Input.dispatchMouseEvent`'s and `Input.dispatchKeyEvent`'s `modifiers` for
/// Shift.
pub const SHIFT: u32 = 8;

/// A running headless Chromium with one page attached.
pub struct Browser {
    child: Child,
    commands: File,
    replies: Receiver<Value>,
    next_id: u64,
    /// The page's session (`Target.attachToTarget` with `flatten`).
    session: String,
    stderr: PathBuf,
}

/// A pipe's two ends, both close-on-exec: `(read, write)`.
fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(r, 0, "pipe2: {}", std::io::Error::last_os_error());
    // SAFETY: pipe2 succeeded: both descriptors are open and owned by nobody else.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

impl Browser {
    /// Starts `chromium` with a window (and so a viewport) of `width` x `height` CSS pixels,
    /// its profile in `dir`, its stderr in `dir`'s `chromium.stderr`, and attaches to a new
    /// blank page.
    pub fn launch(dir: &Dir, width: u32, height: u32) -> Browser {
        let (command_read, command_write) = pipe();
        let (reply_read, reply_write) = pipe();
        let stderr = dir.path("chromium.stderr");
        let mut cmd = Command::new("chromium");
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--no-default-browser-check",
            "--remote-debugging-pipe",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
        ])
        .arg(format!("--window-size={width},{height}"))
        .arg(format!(
            "--user-data-dir={}",
            dir.path("chromium-profile").display()
        ))
        .arg("about:blank")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(File::create(&stderr).unwrap());
        let (fd_in, fd_out) = (command_read.as_raw_fd(), reply_write.as_raw_fd());
        // SAFETY: only fcntl and dup2 (async-signal-safe) run between fork and exec. The
        // descriptors are first copied above 9 so that neither is already 3 or 4 (dup2 onto
        // itself would keep close-on-exec); dup2 clears close-on-exec on 3 and 4.
        unsafe {
            cmd.pre_exec(move || {
                let a = libc::fcntl(fd_in, libc::F_DUPFD_CLOEXEC, 10);
                let b = libc::fcntl(fd_out, libc::F_DUPFD_CLOEXEC, 10);
                if a < 0 || b < 0 || libc::dup2(a, 3) < 0 || libc::dup2(b, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().expect("cannot start chromium");
        // The browser's ends: closed here, so that the reader sees the end of the pipe when
        // the browser exits.
        drop((command_read, reply_write));
        let (send, replies) = channel();
        let mut reader = BufReader::new(File::from(reply_read));
        std::thread::spawn(move || loop {
            let mut message = Vec::new();
            match reader.read_until(0, &mut message) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if message.last() == Some(&0) {
                message.pop();
            }
            let value: Value = serde_json::from_slice(&message).unwrap_or_else(|e| {
                panic!(
                    "not JSON from chromium ({e}): {}",
                    String::from_utf8_lossy(&message)
                )
            });
            if send.send(value).is_err() {
                return;
            }
        });
        let mut browser = Browser {
            child,
            commands: File::from(command_write),
            replies,
            next_id: 0,
            session: String::new(),
            stderr,
        };
        let target = browser.browser_call("Target.createTarget", json!({ "url": "about:blank" }));
        let target = target["targetId"].clone();
        let attached = browser.browser_call(
            "Target.attachToTarget",
            json!({ "targetId": target, "flatten": true }),
        );
        browser.session = attached["sessionId"].as_str().unwrap().to_string();
        browser
    }

    /// The end of the browser's stderr, for a failure's message.
    fn stderr_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        text[text.len().saturating_sub(2000)..].to_string()
    }

    /// Sends `method` (to the page's session unless `session` is `None`) and returns its
    /// reply's `result`; events meanwhile are passed over. Panics on an error reply or none.
    fn send(&mut self, session: Option<String>, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            message["sessionId"] = Value::String(s);
        }
        let mut bytes = serde_json::to_vec(&message).unwrap();
        bytes.push(0);
        if let Err(e) = self.commands.write_all(&bytes) {
            panic!(
                "cannot send {method} to chromium ({e}):\n{}",
                self.stderr_tail()
            );
        }
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.replies.recv_timeout(left) {
                Ok(reply) if reply["id"] == id => {
                    if let Some(error) = reply.get("error") {
                        panic!("{method} {params}: {error}");
                    }
                    return reply["result"].clone();
                }
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => panic!(
                    "no reply to {method} from chromium in {PATIENCE:?}:\n{}",
                    self.stderr_tail()
                ),
                Err(RecvTimeoutError::Disconnected) => panic!(
                    "chromium closed the pipe waiting for {method}:\n{}",
                    self.stderr_tail()
                ),
            }
        }
    }

    /// A command to the browser itself.
    fn browser_call(&mut self, method: &str, params: Value) -> Value {
        self.send(None, method, params)
    }

    /// A command to the page.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let session = self.session.clone();
        self.send(Some(session), method, params)
    }

    /// The value of JavaScript `expression` in the page (returned by value: JSON-like).
    /// Panics if it throws.
    pub fn eval(&mut self, expression: &str) -> Value {
        let out = self.call(
            "Runtime.evaluate",
            json!({ "expression": expression, "returnByValue": true }),
        );
        if let Some(e) = out.get("exceptionDetails") {
            panic!("{expression} threw: {e}");
        }
        out["result"]["value"].clone()
    }

    /// Polls `expression` until it is true; panics after [`PATIENCE`] naming `what`. An
    /// exception counts as "not yet": `Page.navigate` answers before the new document is
    /// committed, so the first polls may run in the old one (`about:blank`, where the page's
    /// elements are null); the last exception is in the panic's message.
    pub fn wait_for(&mut self, what: &str, expression: &str) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let out = self.call(
                "Runtime.evaluate",
                json!({ "expression": expression, "returnByValue": true }),
            );
            let threw = out.get("exceptionDetails").cloned();
            if threw.is_none() && out["result"]["value"] == Value::Bool(true) {
                return;
            }
            if Instant::now() > deadline {
                panic!(
                    "waited {PATIENCE:?} for {what} ({expression}; last exception: {}):\n{}",
                    threw.map_or("none".to_string(), |e| e.to_string()),
                    self.stderr_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Opens `url` in the page and waits until `ready` (JavaScript) is true.
    pub fn open(&mut self, url: &str, ready: &str) {
        self.call("Page.navigate", json!({ "url": url }));
        self.wait_for(&format!("{url} to load"), ready);
    }

    /// `Input.dispatchMouseEvent` of `kind` (`mousePressed`, `mouseMoved`, `mouseReleased`)
    /// at viewport CSS pixel `(x, y)`: the left button, `buttons` the buttons held (1: the
    /// left one), `modifiers` the keys held ([`SHIFT`]). The reply comes once the page has
    /// handled the event.
    pub fn mouse(&mut self, kind: &str, (x, y): (f64, f64), buttons: u32, modifiers: u32) {
        let mut params = json!({
            "type": kind, "x": x, "y": y, "buttons": buttons, "modifiers": modifiers,
        });
        if kind != "mouseMoved" {
            params["button"] = json!("left");
            params["clickCount"] = json!(1);
        }
        self.call("Input.dispatchMouseEvent", params);
    }

    /// A key pressed and released (`Input.dispatchKeyEvent`): `key` and `code` as the DOM
    /// names them, `keycode` its Windows virtual key code.
    pub fn key(&mut self, key: &str, code: &str, keycode: u32) {
        for kind in ["rawKeyDown", "keyUp"] {
            self.call(
                "Input.dispatchKeyEvent",
                json!({
                    "type": kind, "key": key, "code": code,
                    "windowsVirtualKeyCode": keycode, "nativeVirtualKeyCode": keycode,
                }),
            );
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Asked to close (so that it removes its own processes and lets go of its profile),
        // killed if it has not within a few seconds. Nothing here panics: this also runs
        // while a failed test unwinds.
        let mut bytes =
            serde_json::to_vec(&json!({ "id": 0, "method": "Browser.close" })).unwrap_or_default();
        bytes.push(0);
        let _ = self.commands.write_all(&bytes);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
