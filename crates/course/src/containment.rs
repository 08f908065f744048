//! Containing a child process: `course grade --run-tests` runs each learner's build and test
//! binaries through [`contained`].
//!
//! **Isolation.** Build and tests run in their own process group, killed as a whole (SIGKILL)
//! at the time limit. On Linux both start in a fresh network namespace (`unshare(2)` in the
//! child before exec: CLONE_NEWNET as root, CLONE_NEWUSER|CLONE_NEWNET otherwise), which has no
//! interface up, not even loopback; cargo runs `--offline`. The memory limit is RLIMIT_AS on
//! each test binary (not on cargo and rustc, whose address space is much larger than what they
//! use): it works for any user with no setup, where a cgroup needs root or a delegated cgroup
//! tree; it bounds address space, not resident memory, so the limit must leave room for
//! reservations (glibc's arenas are capped with MALLOC_ARENA_MAX=2 to keep them small).
//!
//! **Unprivileged tests.** Started as root, `course grade --run-tests` runs each test binary
//! (never cargo, whose build runs the course's own code) as an unprivileged user ([`RunAs`],
//! `--test-user`): between fork and exec the child sets its limits, enters its network
//! namespace while it is still root, and only then drops its groups, group and user, so it
//! keeps none of root's rights. The sandbox gives it a copy of the binary and of the package in
//! a folder of its own (mode 0700, owned by that user) and nothing else of the course.
//!
//! **A read-only file system.** As root on Linux the test binary also gets a mount namespace of
//! its own (CLONE_NEWNS) in which every mount is read-only (`mount_setattr(2)` with
//! AT_RECURSIVE, Linux 5.12 or later) except a bind mount of its own folder: what any user may
//! write (/tmp, /var/tmp, /dev/shm, /run/lock) is closed to it too, and nothing it does to the
//! mounts reaches the grader's. [`probe_files`] finds out first whether this works here (in a
//! container without CAP_SYS_ADMIN it does not) and the sandbox says so.
//!
//! **Not isolated**, and said so in the output: without root, the file system (the tests run
//! as the user running `course grade` and can read and write what that user can) and the
//! shared build folder (a submission's tests could tamper with what later builds link); as
//! root where the mount namespace cannot be made, what any user may write (/tmp, /var/tmp,
//! /dev/shm); processes that leave the process group (setsid) outlive the time limit; and off
//! Linux the network.

use anyhow::{Context, Result};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How the children are kept off the network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Network {
    /// unshare(CLONE_NEWNET): needs CAP_SYS_ADMIN (root).
    Namespace,
    /// unshare(CLONE_NEWUSER | CLONE_NEWNET): any user, where the kernel allows user namespaces.
    UserNamespace,
    /// No isolation; the reason.
    NotIsolated(String),
}

/// A test binary may write no file larger than this (its log included): RLIMIT_FSIZE.
const TEST_FILE_BYTES: u64 = 256 << 20;

/// The unprivileged user a test binary runs as (never root).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunAs {
    pub uid: u32,
    pub gid: u32,
}

/// Whether, as root, a test binary can be given a file system that is read-only but for its
/// own folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Files {
    /// Its own mount namespace, every mount read-only but its folder.
    ReadOnly,
    /// Not here; the reason.
    NotIsolated(String),
}

/// Started as root: the user a test binary becomes, and the one folder it may write in when
/// `files` is [`Files::ReadOnly`] (the test's working folder must be inside it).
#[derive(Debug, Clone, Copy)]
pub struct Confine<'a> {
    pub user: RunAs,
    pub folder: &'a Path,
    pub files: &'a Files,
}

/// How a contained child ended.
pub struct Finished {
    pub success: bool,
    pub timed_out: bool,
    pub signal: Option<i32>,
}

/// Run `command` in its own process group, in the sandbox's network isolation, with an
/// optional RLIMIT_AS, stdout to `out` (and stderr to `err`, else to `out` as well); at
/// `timeout` the whole group is killed.
#[cfg(unix)]
pub fn contained(
    command: &mut Command,
    out: &Path,
    err: Option<&Path>,
    network: &Network,
    memory: Option<u64>,
    timeout: Duration,
    confine: Option<Confine<'_>>,
) -> Result<Finished> {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    let stdout =
        std::fs::File::create(out).with_context(|| format!("{}: cannot create", out.display()))?;
    let stderr = match err {
        Some(err) => std::fs::File::create(err)
            .with_context(|| format!("{}: cannot create", err.display()))?,
        None => stdout.try_clone().context("cannot share the log")?,
    };
    command
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .process_group(0);
    isolate(command, network, memory, confine)?;
    let mut child = command
        .spawn()
        .with_context(|| format!("cannot start {:?}", command.get_program()))?;
    let pid = rustix::process::Pid::from_child(&child);
    let deadline = Instant::now() + timeout;
    let mut timed_out = false;
    loop {
        // Wait without reaping, so the group's id cannot be reused before it is killed.
        use rustix::process::{WaitId, WaitIdOptions};
        match rustix::process::waitid(
            WaitId::Pid(pid),
            WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT,
        ) {
            Ok(None) => {}
            // Exited, or cannot be waited for: either way, end it.
            Ok(Some(_)) | Err(_) => break,
        }
        if Instant::now() >= deadline {
            timed_out = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // Whatever the tests left running goes with them.
    let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    let status = child.wait().context("cannot wait for the test process")?;
    Ok(Finished {
        success: status.success() && !timed_out,
        timed_out,
        signal: if timed_out { None } else { status.signal() },
    })
}

#[cfg(not(unix))]
pub fn contained(
    _: &mut Command,
    _: &Path,
    _: Option<&Path>,
    _: &Network,
    _: Option<u64>,
    _: Duration,
    _: Option<Confine<'_>>,
) -> Result<Finished> {
    anyhow::bail!("--run-tests needs Linux or another Unix system")
}

/// Set the child's limits and namespaces between fork and exec. Everything the hook needs is
/// prepared here: between fork and exec only system calls are safe (no allocation).
#[cfg(unix)]
fn isolate(
    command: &mut Command,
    network: &Network,
    memory: Option<u64>,
    confine: Option<Confine<'_>>,
) -> Result<()> {
    use std::os::unix::process::CommandExt;
    let mode = match network {
        Network::Namespace => NetMode::Net,
        Network::UserNamespace => NetMode::UserNet,
        Network::NotIsolated(_) => NetMode::None,
    };
    let maps = UserMaps::current();
    let run_as = confine.map(|c| c.user);
    let read_only = match confine {
        Some(Confine {
            folder,
            files: Files::ReadOnly,
            ..
        }) => {
            let cwd = command.get_current_dir().unwrap_or(folder);
            if !cwd.starts_with(folder) {
                anyhow::bail!(
                    "{}: the test's working folder is outside its own folder {}",
                    cwd.display(),
                    folder.display()
                );
            }
            Some(ReadOnlyBut::new(folder, cwd)?)
        }
        _ => None,
    };
    // SAFETY: the hook runs in the child between fork and exec, where only system calls are
    // safe: it makes rustix's setrlimit, unshare, open, write, mount and chdir calls, the
    // mount_setattr system call and the credential calls, on values prepared above (the maps,
    // the C strings of the folders), and allocates nothing.
    unsafe {
        command.pre_exec(move || {
            if let Some(bytes) = memory {
                set_limit(Resource::As, bytes)?;
                set_limit(Resource::Fsize, TEST_FILE_BYTES)?;
                set_limit(Resource::Core, 0)?;
            }
            enter_network_namespace(mode, &maps)?;
            if let Some(read_only) = &read_only {
                read_only.enter()?;
            }
            match run_as {
                Some(user) => drop_privileges(user),
                None => Ok(()),
            }
        });
    }
    Ok(())
}

/// A mount namespace in which every mount is read-only but one folder (a bind mount of
/// itself), prepared before the fork: [`ReadOnlyBut::enter`] runs between fork and exec.
struct ReadOnlyBut {
    folder: std::ffi::CString,
    /// Entered again once the mounts are made: the working folder the child had was the one
    /// under the bind mount, now read-only.
    cwd: std::ffi::CString,
}

impl ReadOnlyBut {
    fn new(folder: &Path, cwd: &Path) -> Result<ReadOnlyBut> {
        use std::os::unix::ffi::OsStrExt;
        let c = |p: &Path| {
            std::ffi::CString::new(p.as_os_str().as_bytes())
                .with_context(|| format!("{}: a path with a NUL byte", p.display()))
        };
        Ok(ReadOnlyBut {
            folder: c(folder)?,
            cwd: c(cwd)?,
        })
    }

    #[cfg(target_os = "linux")]
    fn enter(&self) -> std::io::Result<()> {
        use rustix::mount::{mount_bind, mount_change, MountPropagationFlags};
        use rustix::thread::{unshare_unsafe, UnshareFlags};
        // SAFETY: in the child between fork and exec, with one thread; a mount namespace of
        // its own changes what paths reach, not the descriptors it holds.
        unsafe { unshare_unsafe(UnshareFlags::NEWNS) }?;
        // Nothing done here may propagate back to the grader's mounts.
        mount_change(
            c"/",
            MountPropagationFlags::PRIVATE | MountPropagationFlags::REC,
        )?;
        mount_bind(self.folder.as_c_str(), self.folder.as_c_str())?;
        set_read_only(c"/", true, true)?;
        set_read_only(self.folder.as_c_str(), false, false)?;
        rustix::process::chdir(self.cwd.as_c_str())?;
        Ok(())
    }

    #[cfg(all(unix, not(target_os = "linux")))]
    fn enter(&self) -> std::io::Result<()> {
        Err(std::io::Error::other("only Linux has mount namespaces"))
    }
}

/// `mount_setattr(2)`: make the mount at `path` (and with `recursive` every mount under it)
/// read-only or writable again, keeping its other flags. rustix does not wrap this call.
#[cfg(target_os = "linux")]
fn set_read_only(path: &std::ffi::CStr, read_only: bool, recursive: bool) -> std::io::Result<()> {
    let mut attr = libc::mount_attr {
        attr_set: 0,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    if read_only {
        attr.attr_set = libc::MOUNT_ATTR_RDONLY;
    } else {
        attr.attr_clr = libc::MOUNT_ATTR_RDONLY;
    }
    let flags = if recursive { libc::AT_RECURSIVE } else { 0 };
    // SAFETY: the path is a NUL-terminated C string and `attr` a live mount_attr whose size is
    // passed with it, as mount_setattr(2) requires; the kernel reads both and keeps neither.
    let done = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            flags,
            &attr as *const libc::mount_attr,
            std::mem::size_of::<libc::mount_attr>(),
        )
    };
    if done == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(unix)]
use rustix::process::Resource;

/// Become `user` for good: no supplementary groups, then the group, then the user (real,
/// effective and saved: as root, setuid sets all three), so nothing of root is kept. The
/// child has one thread, so the thread's credentials are the process's.
#[cfg(unix)]
fn drop_privileges(user: RunAs) -> std::io::Result<()> {
    use rustix::process::{Gid, Uid};
    let (uid, gid) = (Uid::from_raw(user.uid), Gid::from_raw(user.gid));
    rustix::thread::set_thread_groups(&[])?;
    rustix::thread::set_thread_gid(gid)?;
    rustix::thread::set_thread_uid(uid)?;
    // Refuse to run the test if root could be taken back.
    if rustix::process::geteuid().is_root() || rustix::process::getuid().is_root() {
        return Err(std::io::Error::other("the test would still run as root"));
    }
    Ok(())
}

/// Soft and hard limit both, so the tests cannot raise it again.
#[cfg(unix)]
fn set_limit(resource: Resource, value: u64) -> std::io::Result<()> {
    Ok(rustix::process::setrlimit(
        resource,
        rustix::process::Rlimit {
            current: Some(value),
            maximum: Some(value),
        },
    )?)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NetMode {
    None,
    Net,
    UserNet,
}

/// `/proc/self/uid_map` and `gid_map` lines that map the user to itself in a new user
/// namespace (so files it creates keep their owner), prepared before the fork.
#[derive(Clone)]
struct UserMaps {
    uid: Vec<u8>,
    gid: Vec<u8>,
}

impl UserMaps {
    #[cfg(unix)]
    fn current() -> UserMaps {
        let (uid, gid) = (
            rustix::process::geteuid().as_raw(),
            rustix::process::getegid().as_raw(),
        );
        UserMaps {
            uid: format!("{uid} {uid} 1\n").into_bytes(),
            gid: format!("{gid} {gid} 1\n").into_bytes(),
        }
    }
}

#[cfg(target_os = "linux")]
fn enter_network_namespace(mode: NetMode, maps: &UserMaps) -> std::io::Result<()> {
    use rustix::thread::{unshare_unsafe, UnshareFlags};
    // SAFETY: this runs in the child between fork and exec, with one thread; unsharing the
    // network and user namespaces (not the file table, FILES) leaves every descriptor usable.
    let unshare = |flags| unsafe { unshare_unsafe(flags) }.map_err(std::io::Error::from);
    match mode {
        NetMode::None => Ok(()),
        NetMode::Net => unshare(UnshareFlags::NEWNET),
        NetMode::UserNet => {
            unshare(UnshareFlags::NEWUSER | UnshareFlags::NEWNET)?;
            write_proc(c"/proc/self/setgroups", b"deny")?;
            write_proc(c"/proc/self/uid_map", &maps.uid)?;
            write_proc(c"/proc/self/gid_map", &maps.gid)
        }
    }
}

#[cfg(all(unix, not(target_os = "linux")))]
fn enter_network_namespace(_: NetMode, _: &UserMaps) -> std::io::Result<()> {
    Ok(())
}

/// Writes `bytes` to a `/proc` file in one `write(2)`, allocating nothing (it runs between fork
/// and exec: `path` is a C string already).
#[cfg(target_os = "linux")]
fn write_proc(path: &std::ffi::CStr, bytes: &[u8]) -> std::io::Result<()> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(path, OFlags::WRONLY | OFlags::CLOEXEC, Mode::empty())?;
    if rustix::io::write(&fd, bytes)? != bytes.len() {
        return Err(std::io::Error::other(format!(
            "{}: short write",
            path.to_string_lossy()
        )));
    }
    Ok(())
}

/// A probe's child: `course --version`, quiet, which succeeds once its hook has run.
fn probe_child(exe: &Path) -> Command {
    let mut command = Command::new(exe);
    command
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// Which network isolation works here: try a child in each mode (`course --version`).
pub fn probe_network() -> Network {
    if !cfg!(target_os = "linux") {
        return Network::NotIsolated("only Linux has network namespaces".to_string());
    }
    let Ok(exe) = std::env::current_exe() else {
        return Network::NotIsolated("cannot find the course binary to try one".to_string());
    };
    let mut errors = Vec::new();
    for (mode, network) in [
        (NetMode::Net, Network::Namespace),
        (NetMode::UserNet, Network::UserNamespace),
    ] {
        let mut command = probe_child(&exe);
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            let maps = UserMaps::current();
            // SAFETY: as in `isolate`: between fork and exec the hook only makes system calls,
            // on the maps prepared here.
            unsafe { command.pre_exec(move || enter_network_namespace(mode, &maps)) };
        }
        match command.status() {
            Ok(status) if status.success() => return network,
            Ok(status) => errors.push(format!("{mode:?}: the child exited with {status}")),
            Err(e) => errors.push(format!(
                "{}: {e}",
                if mode == NetMode::Net {
                    "unshare(CLONE_NEWNET)"
                } else {
                    "unshare(CLONE_NEWUSER|CLONE_NEWNET)"
                }
            )),
        }
    }
    Network::NotIsolated(format!(
        "no network namespace could be made ({})",
        errors.join("; ")
    ))
}

/// As root: whether a test binary can be given a read-only file system but for its folder
/// here (a child, `course --version`, tries it on `folder`).
#[cfg(unix)]
pub fn probe_files(folder: &Path) -> Files {
    if !cfg!(target_os = "linux") {
        return Files::NotIsolated("only Linux has mount namespaces".to_string());
    }
    let Ok(exe) = std::env::current_exe() else {
        return Files::NotIsolated("cannot find the course binary to try one".to_string());
    };
    let read_only = match ReadOnlyBut::new(folder, folder) {
        Ok(r) => r,
        Err(e) => return Files::NotIsolated(format!("{e:#}")),
    };
    let mut command = probe_child(&exe);
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: as in `isolate`: between fork and exec the hook only makes system calls, on
        // the C strings prepared here.
        unsafe { command.pre_exec(move || read_only.enter()) };
    }
    match command.status() {
        Ok(status) if status.success() => Files::ReadOnly,
        Ok(status) => Files::NotIsolated(format!(
            "the child in a read-only mount namespace exited with {status}"
        )),
        Err(e) => Files::NotIsolated(format!(
            "no read-only mount namespace could be made (unshare(CLONE_NEWNS), mount_setattr): {e}"
        )),
    }
}
