//! Shared helpers: paths to the built binaries, the BPF gate (fail in CI, skip elsewhere, and
//! every skip listed for `./run test` to count),
//! a lock so live tests never overlap, and child-process plumbing.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

static LIVE: Mutex<()> = Mutex::new(());

/// The lbscope binary under test.
pub fn lbscope() -> Command {
    Command::new(env!("CARGO_BIN_EXE_lbscope"))
}

/// A workload generator from examples/, built next to the binary.
pub fn example(name: &str) -> Command {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_lbscope"));
    let path = bin.parent().unwrap().join("examples").join(name);
    assert!(
        path.exists(),
        "{} is not built: run `cargo build --release --examples` (./run test does)",
        path.display()
    );
    Command::new(path)
}

/// The machine's CPUs to this test alone, as the live tests have them: for a test whose
/// workload's timing needs every CPU (it waits while a live test runs its load).
pub fn cpus_to_myself() -> MutexGuard<'static, ()> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether live BPF tests can run. In CI (`CI=true`) a machine without BPF is a failure.
pub fn live_guard() -> Option<MutexGuard<'static, ()>> {
    let root = euid_is_root();
    let btf = std::path::Path::new("/sys/kernel/btf/vmlinux").exists();
    if root && btf {
        return Some(LIVE.lock().unwrap_or_else(|e| e.into_inner()));
    }
    skip(&format!(
        "live BPF test needs root and kernel BTF (root={root}, btf={btf})"
    ));
    None
}

/// Where skipped tests are listed, one per line (`./run test` counts them on its closing
/// line, since cargo reports a test that returned early as passed).
pub fn skips_file() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("skipped-tests.txt")
}

/// The running test cannot run here: in CI (`CI=true`) that is a failure; elsewhere it is
/// printed and listed in [`skips_file`], and the caller returns.
pub fn skip(why: &str) {
    let name = std::thread::current()
        .name()
        .unwrap_or("an integration test")
        .to_string();
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{name}: {why}: CI must run it");
    }
    eprintln!("SKIPPED {name}: {why}");
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(skips_file())
    {
        let _ = writeln!(f, "{name}: {why}");
    }
}

fn euid_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|v| v.split_whitespace().nth(1).map(|e| e == "0"))
        })
        .unwrap_or(false)
}

/// A tool needed by a live test; its absence fails the test with the package to install.
pub fn require_tool(name: &str, package: &str) -> String {
    for dir in ["/usr/sbin", "/usr/bin", "/sbin", "/bin", "/usr/local/bin"] {
        let p = format!("{dir}/{name}");
        if std::path::Path::new(&p).exists() {
            return p;
        }
    }
    panic!("{name} not found: install the Debian package {package} (./run test does)");
}

/// Mounts tracefs for perf and bpftrace if it is missing.
pub fn ensure_tracefs() {
    if !std::path::Path::new("/sys/kernel/tracing/events").exists() {
        let _ = Command::new("mount")
            .args(["-t", "tracefs", "tracefs", "/sys/kernel/tracing"])
            .status();
    }
}

/// A gated workload: started, threads created, waiting for `go`.
pub struct Workload {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: std::sync::mpsc::Receiver<String>,
    pub pid: u32,
    pub tids: Vec<u32>,
}

fn parse_tids(line: &str) -> Vec<u32> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix("tids="))
        .map(|t| t.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_default()
}

impl Workload {
    /// Starts `cmd` with `--gate --hold` and waits for its ready line.
    pub fn start(mut cmd: Command) -> Workload {
        let mut child = cmd
            .args(["--gate", "--hold"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("workload starts");
        let stdin = child.stdin.take();
        let out = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let ready = wait_line(&rx, "ready", Duration::from_secs(10));
        let pid = ready
            .split_whitespace()
            .find_map(|w| w.strip_prefix("pid="))
            .and_then(|p| p.parse().ok())
            .expect("ready line has pid=");
        let tids = parse_tids(&ready);
        assert!(!tids.is_empty(), "ready line has tids: {ready}");
        Workload {
            child,
            stdin,
            lines: rx,
            pid,
            tids,
        }
    }

    /// Lets it run and waits for its `done` line; returns that line.
    pub fn go_and_wait(&mut self, timeout: Duration) -> String {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(b"go\n").unwrap();
        stdin.flush().unwrap();
        let done = wait_line(&self.lines, "done", timeout);
        let more = parse_tids(&done);
        for t in more {
            if !self.tids.contains(&t) {
                self.tids.push(t);
            }
        }
        done
    }

    /// Lets it exit.
    pub fn finish(mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

impl Drop for Workload {
    fn drop(&mut self) {
        // A failed test must not leave its workload running into the next one.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A spawned process killed and reaped when dropped: a test that fails between its start and
/// its end must not leave it running (a recording without `-d`, a load process) into the
/// tests after it.
pub struct Reaped(pub Child);

impl Reaped {
    /// Spawns `cmd`.
    pub fn spawn(cmd: &mut Command) -> Reaped {
        Reaped(
            cmd.spawn()
                .unwrap_or_else(|e| panic!("{cmd:?} starts: {e}")),
        )
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_line(rx: &std::sync::mpsc::Receiver<String>, prefix: &str, timeout: Duration) -> String {
    let end = Instant::now() + timeout;
    loop {
        let left = end.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) if l.starts_with(prefix) => return l,
            Ok(_) => continue,
            Err(_) => panic!("no '{prefix}' line within {timeout:?}"),
        }
    }
}

/// A background tool (lbscope, perf, bpftrace, runqlat) whose output is collected.
pub struct Tracer {
    pub name: String,
    child: Child,
    out: Option<std::thread::JoinHandle<String>>,
    err: Option<std::thread::JoinHandle<String>>,
    err_lines: std::sync::mpsc::Receiver<String>,
    out_lines: std::sync::mpsc::Receiver<String>,
}

fn collect(
    r: impl std::io::Read + Send + 'static,
    tx: std::sync::mpsc::Sender<String>,
) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut all = String::new();
        for l in BufReader::new(r).lines().map_while(Result::ok) {
            let _ = tx.send(l.clone());
            all.push_str(&l);
            all.push('\n');
        }
        all
    })
}

impl Tracer {
    /// The traced program's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Starts `cmd` and waits until a line containing `ready` appears on stdout or stderr
    /// (or, with `None`, waits `settle`).
    pub fn start(name: &str, mut cmd: Command, ready: Option<&str>, settle: Duration) -> Tracer {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{name} starts: {e}"));
        let (otx, orx) = std::sync::mpsc::channel();
        let (etx, erx) = std::sync::mpsc::channel();
        let out = collect(child.stdout.take().unwrap(), otx);
        let err = collect(child.stderr.take().unwrap(), etx);
        let t = Tracer {
            name: name.to_string(),
            child,
            out: Some(out),
            err: Some(err),
            err_lines: erx,
            out_lines: orx,
        };
        if let Some(word) = ready {
            let end = Instant::now() + Duration::from_secs(30);
            'wait: loop {
                assert!(
                    Instant::now() < end,
                    "{name} did not print '{word}' in 30 s"
                );
                for rx in [&t.out_lines, &t.err_lines] {
                    while let Ok(l) = rx.try_recv() {
                        if l.contains(word) {
                            break 'wait;
                        }
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        std::thread::sleep(settle);
        t
    }

    /// Sends `signal` (a name for kill(1): USR1, INT).
    pub fn signal(&self, signal: &str) {
        let _ = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status();
    }

    /// Sends SIGINT and returns (exit success, stdout, stderr).
    pub fn interrupt(self) -> (bool, String, String) {
        self.signal("INT");
        self.wait_exit(Duration::from_secs(30), "SIGINT")
    }

    /// Waits up to `timeout` for the process to end by itself (`after` names what should
    /// end it) and returns (exit success, stdout, stderr).
    pub fn wait_exit(mut self, timeout: Duration, after: &str) -> (bool, String, String) {
        let end = Instant::now() + timeout;
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > end {
                let _ = self.child.kill();
                panic!("{} did not stop within {timeout:?} of {after}", self.name);
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let out = self
            .out
            .take()
            .map(|h| h.join().unwrap())
            .unwrap_or_default();
        let err = self
            .err
            .take()
            .map(|h| h.join().unwrap())
            .unwrap_or_default();
        (status.success(), out, err)
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        // A failed test must not leave perf, bpftrace or runqlat attached.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port nobody listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The body of `GET path` on 127.0.0.1:`port` (HTTP/1.0: the server closes when done).
pub fn get(port: u16, path: &str) -> Option<String> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut all = String::new();
    s.read_to_string(&mut all).ok()?;
    let (head, body) = all.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.").then(|| body.to_string())
}

/// The JSON objects of a command's output, one a line (other lines, such as a text header,
/// left out).
pub fn json_lines(s: &str) -> Vec<serde_json::Value> {
    s.lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect()
}
