//! The recorded command: forked, held before exec until its events are open (so they can be
//! enabled exactly at exec), then released. SIGINT and SIGTERM sent to cpiflame are forwarded.

use std::ffi::{CString, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// How a process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitStatus {
    Exited(i32),
    Signaled(i32),
}

impl ExitStatus {
    /// The shell's convention: the exit code, or 128 + N when killed by signal N.
    pub fn code(self) -> i32 {
        match self {
            ExitStatus::Exited(c) => c,
            ExitStatus::Signaled(s) => 128 + s,
        }
    }

    fn from_wait(status: i32) -> ExitStatus {
        if libc::WIFSIGNALED(status) {
            ExitStatus::Signaled(libc::WTERMSIG(status))
        } else {
            ExitStatus::Exited(libc::WEXITSTATUS(status))
        }
    }
}

/// A forked child waiting to exec.
pub struct Child {
    pub pid: i32,
    go: i32,
    exec_error: i32,
    status: Option<ExitStatus>,
}

fn pipe() -> io::Result<(i32, i32)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two fds into the array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((fds[0], fds[1]))
}

/// Forks `argv`; the child waits for [`Child::start`] before it execs.
pub fn spawn_held(argv: &[OsString]) -> io::Result<Child> {
    spawn_held_with_env(argv, &[])
}

/// [`spawn_held`], the command's environment this process's with `env`'s variables set
/// (replacing those of the same name).
pub fn spawn_held_with_env(argv: &[OsString], env: &[(OsString, OsString)]) -> io::Result<Child> {
    let nul = |what| move |_| io::Error::new(io::ErrorKind::InvalidInput, what);
    let args: Vec<CString> = argv
        .iter()
        .map(|a| CString::new(a.as_bytes()))
        .collect::<Result<_, _>>()
        .map_err(nul("argument contains a NUL byte"))?;
    if args.is_empty() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "no command"));
    }
    let mut ptrs: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    // The environment is made before the fork: the child may only call what is
    // async-signal-safe.
    let environment: Option<Vec<CString>> = if env.is_empty() {
        None
    } else {
        let mut vars: Vec<(OsString, OsString)> = std::env::vars_os()
            .filter(|(name, _)| !env.iter().any(|(n, _)| n == name))
            .collect();
        vars.extend(env.iter().cloned());
        let joined = vars.iter().map(|(name, value)| {
            let mut bytes = name.as_bytes().to_vec();
            bytes.push(b'=');
            bytes.extend_from_slice(value.as_bytes());
            CString::new(bytes)
        });
        Some(
            joined
                .collect::<Result<_, _>>()
                .map_err(nul("environment variable contains a NUL byte"))?,
        )
    };
    let mut env_ptrs: Vec<*const libc::c_char> =
        environment.iter().flatten().map(|v| v.as_ptr()).collect();
    env_ptrs.push(std::ptr::null());
    let (go_r, go_w) = pipe()?;
    let (err_r, err_w) = pipe()?;
    // SAFETY: the child only calls async-signal-safe functions (read, write, close, execvp(e),
    // _exit) on memory prepared before the fork.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        unsafe {
            libc::close(go_w);
            libc::close(err_r);
            let mut byte = 0u8;
            // Parent gone (or failed before releasing us): never run the command unrecorded.
            if libc::read(go_r, &mut byte as *mut u8 as *mut libc::c_void, 1) != 1 {
                libc::_exit(127);
            }
            if environment.is_some() {
                libc::execvpe(ptrs[0], ptrs.as_ptr(), env_ptrs.as_ptr());
            } else {
                libc::execvp(ptrs[0], ptrs.as_ptr());
            }
            let errno = *libc::__errno_location();
            libc::write(err_w, &errno as *const i32 as *const libc::c_void, 4);
            libc::_exit(127);
        }
    }
    unsafe {
        libc::close(go_r);
        libc::close(err_w);
    }
    Ok(Child {
        pid,
        go: go_w,
        exec_error: err_r,
        status: None,
    })
}

impl Child {
    /// Lets the child exec. An exec that fails is reported here, with the child reaped.
    pub fn start(&mut self) -> io::Result<()> {
        let byte = 1u8;
        // SAFETY: plain fd writes and reads on our own pipes.
        unsafe {
            libc::write(self.go, &byte as *const u8 as *const libc::c_void, 1);
            libc::close(self.go);
        }
        self.go = -1;
        let mut errno = 0i32;
        let n = unsafe {
            libc::read(
                self.exec_error,
                &mut errno as *mut i32 as *mut libc::c_void,
                4,
            )
        };
        unsafe { libc::close(self.exec_error) };
        self.exec_error = -1;
        if n == 4 {
            self.wait();
            return Err(io::Error::from_raw_os_error(errno));
        }
        Ok(())
    }

    /// The exit status, if the child has ended (does not block).
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            let mut status = 0;
            // SAFETY: waitpid on our own child.
            let r = unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) };
            if r == self.pid {
                self.status = Some(ExitStatus::from_wait(status));
            }
        }
        self.status
    }

    /// Waits for the child to end.
    pub fn wait(&mut self) -> ExitStatus {
        while self.status.is_none() {
            let mut status = 0;
            // SAFETY: waitpid on our own child.
            let r = unsafe { libc::waitpid(self.pid, &mut status, 0) };
            if r == self.pid {
                self.status = Some(ExitStatus::from_wait(status));
            } else if r < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                self.status = Some(ExitStatus::Exited(127));
            }
        }
        self.status.unwrap_or(ExitStatus::Exited(127))
    }

    /// Ends the child: SIGTERM, then SIGKILL if it is still there after `grace`; reaps it.
    /// A child that has ended already is only reaped.
    pub fn terminate(&mut self, grace: std::time::Duration) -> ExitStatus {
        if let Some(status) = self.try_wait() {
            return status;
        }
        self.kill(libc::SIGTERM);
        let deadline = std::time::Instant::now() + grace;
        while std::time::Instant::now() < deadline {
            if let Some(status) = self.try_wait() {
                return status;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        self.kill(libc::SIGKILL);
        self.wait()
    }

    /// Sends `signal` to the child.
    pub fn kill(&self, signal: i32) {
        if self.status.is_none() {
            // SAFETY: kill on our own child's pid, which we have not reaped.
            unsafe { libc::kill(self.pid, signal) };
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        // A child still held before exec must not run unrecorded: closing `go` makes it exit.
        unsafe {
            if self.go >= 0 {
                libc::close(self.go);
            }
            if self.exec_error >= 0 {
                libc::close(self.exec_error);
            }
        }
    }
}

/// Set by SIGINT/SIGTERM; the recorder stops when it sees it.
pub static STOP: AtomicBool = AtomicBool::new(false);
/// Where SIGINT/SIGTERM are forwarded (0: nowhere, e.g. when attached to a process).
static FORWARD_TO: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(signal: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
    let pid = FORWARD_TO.load(Ordering::SeqCst);
    if pid > 0 {
        // SAFETY: kill is async-signal-safe.
        unsafe { libc::kill(pid, signal) };
    }
}

/// Installs the SIGINT/SIGTERM handler, forwarding to `pid` when it is > 0.
pub fn forward_signals(pid: i32) {
    FORWARD_TO.store(pid, Ordering::SeqCst);
    STOP.store(false, Ordering::SeqCst);
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: installs a handler that only touches atomics and calls kill.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as *const () as usize;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command sees the variables given (one replacing this process's value of the same
    /// name) and keeps the rest of this process's environment.
    #[test]
    fn the_command_gets_the_variables_given_over_this_processs() {
        let path = std::env::var_os("PATH").expect("PATH is set");
        let mut path_check = OsString::from("test \"$PATH\" = '");
        path_check.push(&path);
        path_check.push("' && test \"$CPIFLAME_CHILD_A\" = 'a b' && test \"$HOME\" = /nowhere");
        let argv = [OsString::from("sh"), OsString::from("-c"), path_check];
        let env = [
            (OsString::from("CPIFLAME_CHILD_A"), OsString::from("a b")),
            (OsString::from("HOME"), OsString::from("/nowhere")),
        ];
        let mut child = spawn_held_with_env(&argv, &env).unwrap();
        child.start().unwrap();
        assert_eq!(child.wait(), ExitStatus::Exited(0));
        // Without variables, this process's own.
        let argv = [
            OsString::from("sh"),
            OsString::from("-c"),
            OsString::from("test -z \"$CPIFLAME_CHILD_A\""),
        ];
        let mut child = spawn_held(&argv).unwrap();
        child.start().unwrap();
        assert_eq!(child.wait(), ExitStatus::Exited(0));
        let bad = [(OsString::from("X"), OsString::from("a\0b"))];
        let e = spawn_held_with_env(&argv, &bad).err().unwrap();
        assert!(e.to_string().contains("NUL"), "{e}");
    }
}
