//! The terminal while Spear owns it: raw mode, the alternate screen, bracketed paste and mouse
//! reporting on entry; all of it undone on exit, on error and on panic (the panic hook restores
//! before the panic message is printed). Logs go to a file under `$XDG_STATE_HOME/spear/`, never
//! to the screen. Invariant: `restore` is safe to call any number of times, from anywhere.

use std::io::{Write, stdout};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use crossterm::event::{
    DisableBracketedPaste, DisableFocusChange, DisableMouseCapture, EnableBracketedPaste,
    EnableFocusChange, EnableMouseCapture, KeyboardEnhancementFlags, PopKeyboardEnhancementFlags,
    PushKeyboardEnhancementFlags,
};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

static ENTERED: AtomicBool = AtomicBool::new(false);

pub type Term = Terminal<CrosstermBackend<std::io::Stdout>>;

/// Restores the terminal when dropped.
pub struct TerminalGuard;

impl TerminalGuard {
    /// Take the terminal. The third value: whether it answered the keyboard protocol query
    /// (then Shift+Enter arrives as itself). The enhancement is requested either way (a
    /// terminal that does not know it ignores it) and given back on every way out.
    pub fn enter(ask_background: bool) -> std::io::Result<Entered> {
        install_panic_hook();
        enable_raw_mode()?;
        ENTERED.store(true, Ordering::SeqCst);
        let guard = TerminalGuard;
        // Asked first, before anything else reads the input, so the answers are not taken for
        // keys (and skipped under NO_COLOR, where no colour is drawn).
        let background = if ask_background {
            query_background(BACKGROUND_WAIT)
        } else {
            None
        };
        // Read before the event stream starts, so the reply is not taken for keys.
        let enhanced = crossterm::terminal::supports_keyboard_enhancement().unwrap_or(false);
        execute!(
            stdout(),
            EnterAlternateScreen,
            EnableBracketedPaste,
            EnableMouseCapture,
            EnableFocusChange,
            PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
        )?;
        let term = Terminal::new(CrosstermBackend::new(stdout()))?;
        Ok(Entered {
            guard,
            term,
            enhanced,
            background,
        })
    }
}

/// The terminal taken: the guard that gives it back, the drawing handle, and what it answered.
pub struct Entered {
    pub guard: TerminalGuard,
    pub term: Term,
    /// It answered the keyboard protocol query: Shift+Enter arrives as itself.
    pub enhanced: bool,
    /// Its background colour (OSC 11), when it said within `BACKGROUND_WAIT`.
    pub background: Option<(f64, f64, f64)>,
}

/// How long the screen waits at start for the terminal's background colour: for the first
/// byte of an answer. Once one has come, the rest (up to DA1's answer) is read for at most
/// `ANSWER_WAIT`, so a slow link's late answer is not left to be read as keys.
pub const BACKGROUND_WAIT: std::time::Duration = std::time::Duration::from_millis(100);
const ANSWER_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// Ask for the background colour (OSC 11) and, as the sentinel every terminal answers, the
/// primary device attributes (DA1); read standard input until DA1's answer: nothing within
/// `wait` means no answer is coming.
fn query_background(wait: std::time::Duration) -> Option<(f64, f64, f64)> {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    use rustix::io::Errno;
    let mut out = stdout();
    out.write_all(b"\x1b]11;?\x1b\\\x1b[c").ok()?;
    out.flush().ok()?;
    let stdin = std::io::stdin();
    let start = std::time::Instant::now();
    let mut got = Vec::new();
    while !crate::tui::background::has_da1(&got) && got.len() < 4096 {
        let limit = if got.is_empty() { wait } else { ANSWER_WAIT };
        let left = (start + limit).saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            break;
        }
        let limit = Timespec {
            tv_sec: left.as_secs() as _,
            tv_nsec: left.subsec_nanos() as _,
        };
        let mut fds = [PollFd::new(&stdin, PollFlags::IN)];
        match poll(&mut fds, Some(&limit)) {
            Ok(0) => break,
            Ok(_) => {}
            Err(Errno::INTR) => continue,
            Err(_) => break,
        }
        let mut buf = [0u8; 512];
        match rustix::io::read(&stdin, &mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(Errno::INTR | Errno::AGAIN) => continue,
            Err(_) => break,
        }
    }
    crate::tui::background::parse_osc11(&got)
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// Leave the alternate screen, turn raw mode off, show the cursor. Idempotent.
pub fn restore() {
    if ENTERED.swap(false, Ordering::SeqCst) {
        let _ = execute!(
            stdout(),
            // A frame cut short by a panic leaves no terminal waiting for its end.
            crossterm::terminal::EndSynchronizedUpdate,
            PopKeyboardEnhancementFlags,
            DisableFocusChange,
            DisableMouseCapture,
            DisableBracketedPaste,
            LeaveAlternateScreen,
            crossterm::cursor::Show
        );
        let _ = disable_raw_mode();
    }
}

fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        // A document parser's panic is caught and reported as a failed extraction: the screen
        // stays the TUI's, and nothing is printed over it.
        if crate::tools::documents::panic_is_contained() {
            return;
        }
        restore();
        previous(info);
    }));
}

/// Start a frame the terminal shows whole (DEC mode 2026; a terminal that does not know the
/// mode ignores it).
pub fn begin_frame() {
    let _ = execute!(stdout(), crossterm::terminal::BeginSynchronizedUpdate);
}

/// End the frame begun by [`begin_frame`].
pub fn end_frame() {
    let _ = execute!(stdout(), crossterm::terminal::EndSynchronizedUpdate);
}

/// Write fixed bytes to the terminal (the bell, a notification: `notify::Caller`'s bytes,
/// which never carry model text).
pub fn write_bytes(bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    let mut out = stdout();
    let _ = out.write_all(bytes);
    let _ = out.flush();
}

/// Copy `text` to the terminal's clipboard with OSC 52 (works over ssh and in tmux with
/// `set-clipboard on`).
pub fn copy_osc52(text: &str) {
    let seq = format!("\x1b]52;c;{}\x07", base64(text.as_bytes()));
    let mut out = stdout();
    let _ = out.write_all(seq.as_bytes());
    let _ = out.flush();
}

fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                s.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

/// Send `tracing` to `dir/tui.log`; the guard flushes it on drop.
pub fn init_logging(
    dir: &Path,
) -> std::io::Result<(tracing_appender::non_blocking::WorkerGuard, PathBuf)> {
    std::fs::create_dir_all(dir)?;
    let appender = tracing_appender::rolling::never(dir, "tui.log");
    let (writer, guard) = tracing_appender::non_blocking(appender);
    let filter = crate::config::Env::Process.log_filter();
    let _ = tracing_subscriber::fmt()
        .with_writer(writer)
        .with_ansi(false)
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .try_init();
    Ok((guard, dir.join("tui.log")))
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_matches_the_standard_alphabet_and_padding() {
        assert_eq!(super::base64(b"Man"), "TWFu");
        assert_eq!(super::base64(b"Ma"), "TWE=");
        assert_eq!(super::base64(b"M"), "TQ==");
        assert_eq!(super::base64(b""), "");
    }
}
