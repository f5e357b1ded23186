//! A private tmux server for the end-to-end tests of the screen, and reading what it shows.

use std::process::Command;
use std::time::{Duration, Instant};

/// Whether tmux is installed; prints why a test is skipped when it is not (a failure under
/// `PROVETOP_REQUIRE_SYSTEM_TOOLS=1`: [`crate::system`]). `_test` is kept for the callers:
/// the skip line names the running test itself.
pub fn have_tmux(_test: &str) -> bool {
    crate::system::have("tmux", "tmux")
}

/// A private tmux server with one window running a command.
pub struct Tmux {
    socket: String,
}

impl Tmux {
    /// Start `shell_cmd` (run by sh) in a detached session of the given size.
    ///
    /// With `PROVETOP_STOP_ON_HANGUP=1` exported: a test ends by killing its tmux server,
    /// and a live screen that detached on that hangup (the default) would leave its
    /// supervisor and prover running after the test. A test of the default unsets it in its
    /// command.
    pub fn start(name: &str, w: u16, h: u16, shell_cmd: &str) -> Tmux {
        let shell_cmd = &format!("export PROVETOP_STOP_ON_HANGUP=1; {shell_cmd}");
        let socket = format!("provetop-test-{name}-{}", std::process::id());
        let t = Tmux { socket };
        let st = t
            .cmd()
            .args([
                "new-session",
                "-d",
                "-s",
                "main",
                "-x",
                &w.to_string(),
                "-y",
                &h.to_string(),
            ])
            .arg(shell_cmd)
            .status()
            .expect("run tmux");
        assert!(st.success(), "tmux new-session failed");
        t
    }

    fn cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.socket, "-f", "/dev/null"]);
        c
    }

    /// The visible screen.
    pub fn capture(&self) -> String {
        let o = self
            .cmd()
            .args(["capture-pane", "-p", "-t", "main"])
            .output()
            .expect("tmux capture");
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// Send keys (tmux key names: "q", "Right", "S-Right", "Space").
    pub fn keys(&self, keys: &[&str]) {
        let st = self
            .cmd()
            .args(["send-keys", "-t", "main"])
            .args(keys)
            .status()
            .expect("tmux send-keys");
        assert!(st.success());
    }

    /// Send bytes to the program as its terminal input, as they are (`send-keys -H`).
    pub fn send_bytes(&self, bytes: &[u8]) {
        let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let st = self
            .cmd()
            .args(["send-keys", "-t", "main", "-H"])
            .args(&hex)
            .status()
            .expect("tmux send-keys -H");
        assert!(st.success());
    }

    /// A mouse event as an xterm SGR sequence (`ESC [ < button ; column ; row M`, `m` for a
    /// release), at a 0-based cell: button 0 is the left button, 32 added a drag, 64 and 65
    /// the wheel up and down.
    pub fn sgr_mouse(&self, button: u16, x: u16, y: u16, press: bool) {
        let end = if press { 'M' } else { 'm' };
        let seq = format!("\x1b[<{button};{};{}{end}", x + 1, y + 1);
        self.send_bytes(seq.as_bytes());
    }

    /// A left click (press and release) at a 0-based cell.
    pub fn click(&self, x: u16, y: u16) {
        self.sgr_mouse(0, x, y, true);
        self.sgr_mouse(0, x, y, false);
    }

    /// Resize the window (the program in it gets SIGWINCH).
    pub fn resize(&self, w: u16, h: u16) {
        let st = self
            .cmd()
            .args(["resize-window", "-t", "main", "-x", &w.to_string(), "-y"])
            .arg(h.to_string())
            .status()
            .expect("tmux resize-window");
        assert!(st.success(), "tmux resize-window {w}x{h} failed");
    }

    /// A pane format value, e.g. `#{alternate_on}`.
    pub fn format(&self, f: &str) -> String {
        let o = self
            .cmd()
            .args(["display-message", "-p", "-t", "main", f])
            .output()
            .expect("tmux display");
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    }

    /// Poll the screen until `pred` holds; panics with the last screen after `timeout`.
    pub fn wait_for(&self, what: &str, timeout: Duration, pred: impl Fn(&str) -> bool) -> String {
        let t0 = Instant::now();
        loop {
            let s = self.capture();
            if pred(&s) {
                return s;
            }
            if t0.elapsed() > timeout {
                panic!("timed out after {timeout:?} waiting for {what}; screen:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").status();
    }
}

/// Quote for sh.
pub fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The child's pid from the header ("running pid 123").
pub fn header_pid(screen: &str) -> Option<u32> {
    let i = screen.find(" pid ")?;
    screen[i + 5..]
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// `provetop run --record DIR/s.ptop -- sleep 600` in tmux (or `program`, given the same
/// words after its own first ones); returns the tmux session, the program's pid and the
/// child's.
pub fn start_sleeper(
    name: &str,
    program: Option<String>,
    dir: &std::path::Path,
) -> (Tmux, u32, u32) {
    let d = dir.display().to_string();
    let program = program.unwrap_or_else(|| {
        format!(
            "{} run --record {d}/s.ptop --",
            sh_quote(&crate::bins::provetop().display().to_string())
        )
    });
    let cmd = format!(
        "cd {d} && echo $$ > {d}/pid && exec env XDG_STATE_HOME={d}/state XDG_CONFIG_HOME={d}/config {program} sleep 600",
    );
    // The pane stays after provetop exits, so the screen it leaves can be read.
    let tmux = Tmux::start(
        name,
        80,
        24,
        &format!("sh -c {}; echo PROVETOP-EXIT=$?; sleep 600", sh_quote(&cmd)),
    );
    let screen = tmux.wait_for("the child running", Duration::from_secs(30), |s| {
        s.contains("running pid")
    });
    let child = header_pid(&screen).expect("child pid");
    let me: u32 = std::fs::read_to_string(dir.join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    (tmux, me, child)
}
