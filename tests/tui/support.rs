//! Helpers: an app in a known state, events at known times, and a render to text (and to a
//! style map, for the themes) through `TestBackend`.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use spear::agent::event::AgentEvent;
use spear::harness::command_policy::CommandClass;
use spear::harness::primitives::{
    Capability, CapabilitySet, ExecutionMode, ToolResult, ToolStatus,
};
use spear::tools::approval::{ApprovalId, CallApprovalRequest};
use spear::tools::envelope::ToolResultEnvelope;
use spear::tools::preview::Preview;
use spear::tui::app::{App, AppInit};
use spear::tui::event::{Effect, Event};
use spear::tui::theme::Theme;
use spear::tui::widgets::status_bar::{SandboxHealth, StatusInfo};

pub fn init_with(theme: &str, model: bool) -> AppInit {
    AppInit {
        status: StatusInfo {
            mode: ExecutionMode::Ask,
            model: model.then(|| ("local".to_string(), "qwen3-coder".to_string())),
            workspace: "/work/demo".into(),
            sandbox: SandboxHealth::Ok,
            network: false,
            undoable: 0,
            standard: None,
            tokens: 0,
            busy: false,
        },
        theme: Theme::named(theme).unwrap(),
        keyboard_enhanced: true,
        cwd: "/work/demo".into(),
        no_model: (!model).then(|| "no model is configured for provider `default`".to_string()),
        warnings: Vec::new(),
        results: None,
    }
}

pub fn app_with(theme: &str, model: bool, t0: Instant) -> App {
    let mut app = App::new(init_with(theme, model), t0);
    app.update(Event::Resize(80, 24));
    app
}

pub fn app(t0: Instant) -> App {
    app_with("dark", true, t0)
}

pub fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

pub fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

pub fn press(app: &mut App, k: KeyEvent, at: Instant) -> Vec<Effect> {
    app.update(Event::Key { key: k, at })
}

pub fn type_text(app: &mut App, text: &str, at: Instant) {
    for c in text.chars() {
        press(app, key(KeyCode::Char(c)), at);
    }
}

pub fn agent(app: &mut App, e: AgentEvent) -> Vec<Effect> {
    app.update(Event::Agent(e))
}

pub fn ms(t0: Instant, ms: u64) -> Instant {
    t0 + Duration::from_millis(ms)
}

pub fn envelope(
    call_id: &str,
    tool: &str,
    result: ToolResult,
    class: Option<CommandClass>,
) -> Box<ToolResultEnvelope> {
    let mut e = ToolResultEnvelope::build(call_id, tool, result, None);
    e.class = class;
    Box::new(e)
}

pub fn ok_output(stdout: &str, exit: i32) -> ToolResult {
    let mut r = ToolResult::ok(stdout);
    r.exit_code = Some(exit);
    r
}

pub fn refused(reason: &str) -> ToolResult {
    ToolResult::refused(ToolStatus::InvalidPath, reason)
}

pub fn approval(
    call_id: &str,
    command: &str,
    class: &str,
    writes: &[&str],
    network: bool,
) -> AgentEvent {
    let mut asking = CapabilitySet::of(&[Capability::WorkspaceWrite]);
    if class == "SHELL_COMPLEX" {
        asking = asking.with(Capability::ShellComplex);
    }
    if network {
        asking = asking.with(Capability::Network);
    }
    let first = command.split_whitespace().next().unwrap_or("");
    let tool = match first {
        "patch" | "write_file" | "delete_file" => first,
        _ => "terminal",
    };
    AgentEvent::ApprovalRequested {
        request: Box::new(CallApprovalRequest {
            id: request_id(call_id),
            call_id: call_id.into(),
            tool: tool.into(),
            mode: ExecutionMode::Ask,
            command: command.into(),
            class: serde_json::from_value::<CommandClass>(serde_json::json!(class)).unwrap(),
            asking_for: asking,
            reasons: vec![format!("`{first}` writes in the workspace")],
            targets: writes.iter().map(|s| s.to_string()).collect(),
            network,
            preview: None,
            // What the router offers for a plain command: it exactly, then wider.
            always: match tool {
                "terminal" if !command.contains([';', '|', '&', '$', '>']) => {
                    let words: Vec<&str> = command.split_whitespace().collect();
                    std::iter::once(command.to_string())
                        .chain(
                            (2..words.len())
                                .rev()
                                .map(|k| format!("{} *", words[..k].join(" "))),
                        )
                        .collect()
                }
                _ => Vec::new(),
            },
        }),
    }
}

/// The request id `approval(call_id, ..)` gives its request: the call id's number, so a test
/// can name the answer it expects.
pub fn request_id(call_id: &str) -> ApprovalId {
    ApprovalId(
        call_id
            .trim_start_matches(|c: char| !c.is_ascii_digit())
            .parse()
            .unwrap(),
    )
}

/// `approval(..)` with the tool's preview attached (a patch's file change).
pub fn with_preview(mut event: AgentEvent, preview: Preview) -> AgentEvent {
    if let AgentEvent::ApprovalRequested { request } = &mut event {
        request.preview = Some(preview);
    }
    event
}

/// The screen as text.
pub fn render(app: &App, w: u16, h: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| spear::tui::ui::draw(app, f)).unwrap();
    term.backend().to_string()
}

/// The screen's colours: each row as runs of `[fg/bg/modifiers]text`.
pub fn style_map(app: &App, w: u16, h: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| spear::tui::ui::draw(app, f)).unwrap();
    let buf = term.backend().buffer();
    let mut out = String::new();
    for y in 0..h {
        let mut last = String::new();
        for x in 0..w {
            let c = &buf[(x, y)];
            let style = format!("{:?}/{:?}/{:?}", c.fg, c.bg, c.modifier);
            if style != last {
                out.push_str(&format!("[{style}]"));
                last = style;
            }
            out.push_str(c.symbol());
        }
        out.push('\n');
    }
    out
}
