//! The app driven through `update` without a terminal: sending, newlines, history, paste,
//! `!COMMAND`, slash commands, mode cycling, cancel, quit, and the ASK dialog's decisions with
//! its early-key guard and the session allow-list.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use spear::agent::event::{AgentEvent, StopReason};
use spear::agent::session::{AppliesFrom, Change, SessionEvent};
use spear::harness::audit::DecidedBy;
use spear::harness::command_policy::{ApprovalDecision, SaveScope};
use spear::harness::primitives::{ExecutionMode, ToolResult, ToolStatus};
use spear::tui::app::App;
use spear::tui::event::{Effect, Event};
use spear::tui::notify::CallBack;

use crate::support::*;

fn composer_text(app: &spear::tui::app::App) -> String {
    app.composer.lines().join("\n")
}

#[test]
fn enter_sends_and_shift_enter_or_ctrl_j_insert_a_newline() {
    let t0 = Instant::now();
    let mut app = app(t0);
    type_text(&mut app, "one", t0);
    press(
        &mut app,
        KeyEvent::new(KeyCode::Enter, KeyModifiers::SHIFT),
        t0,
    );
    type_text(&mut app, "two", t0);
    press(&mut app, ctrl('j'), t0);
    type_text(&mut app, "three", t0);
    assert_eq!(composer_text(&app), "one\ntwo\nthree");
    let fx = press(&mut app, key(KeyCode::Enter), t0);
    assert_eq!(fx, vec![Effect::Submit("one\ntwo\nthree".into())]);
    assert_eq!(composer_text(&app), "");
    assert!(app.busy());
}

/// Text sent while a turn runs is kept, shown as queued, takes Up back into the box to edit,
/// and is sent when the turn ends (a dialog opening meanwhile does not take it).
#[test]
fn a_message_sent_during_a_turn_is_queued_and_sent_when_it_ends() {
    let t0 = Instant::now();
    let mut app = app(t0);
    type_text(&mut app, "first", t0);
    press(&mut app, key(KeyCode::Enter), t0);
    assert!(app.busy());
    type_text(&mut app, "second", t0);
    assert!(press(&mut app, key(KeyCode::Enter), t0).is_empty());
    assert_eq!(app.queued.as_deref(), Some("second"));
    assert!(
        render(&app, 100, 30).contains("queued, sent when the turn ends: second"),
        "{}",
        render(&app, 100, 30)
    );
    // Up in the empty box takes it back; edited and queued again.
    press(&mut app, key(KeyCode::Up), t0);
    assert_eq!(composer_text(&app), "second");
    assert!(app.queued.is_none());
    type_text(&mut app, " edited", t0);
    press(&mut app, key(KeyCode::Enter), t0);
    // A question opening mid-word does not take what is typed for the queue.
    type_text(&mut app, "thi", t0);
    agent(
        &mut app,
        approval("c1", "make", "SHELL_COMPLEX", &[], false),
    );
    type_text(&mut app, "rd", ms(t0, 50));
    assert!(app.confirm.is_some(), "the typing answered nothing");
    let fx = press(&mut app, key(KeyCode::Char('n')), ms(t0, 1000));
    assert!(matches!(fx[..], [Effect::Answer { .. }]), "{fx:?}");
    let fx = app.update(Event::Agent(AgentEvent::Done {
        reason: StopReason::Finished,
        tool_calls: 1,
        message: None,
    }));
    assert_eq!(
        fx,
        vec![
            Effect::CallBack(CallBack::TurnEnded),
            Effect::Submit("second edited".into())
        ]
    );
    assert!(app.busy() && app.queued.is_none());
    assert_eq!(composer_text(&app), "thi");
}

/// The bell calls the person back when a question opens or a turn ends, unless the terminal
/// said Spear's window has the focus (a terminal that never says counts as unfocused).
#[test]
fn the_bell_rings_for_a_question_or_a_finished_turn_unless_the_window_has_focus() {
    let t0 = Instant::now();
    let done = || {
        Event::Agent(AgentEvent::Done {
            reason: StopReason::Finished,
            tool_calls: 0,
            message: None,
        })
    };
    for (focus, rings) in [(None, true), (Some(false), true), (Some(true), false)] {
        let mut app = app(t0);
        if let Some(f) = focus {
            app.update(Event::Focus(f));
        }
        type_text(&mut app, "go", t0);
        press(&mut app, key(KeyCode::Enter), t0);
        let fx = app.update(Event::Agent(approval(
            "c1",
            "make",
            "SHELL_COMPLEX",
            &[],
            false,
        )));
        assert_eq!(
            fx.iter().any(|e| matches!(e, Effect::CallBack(_))),
            rings,
            "{focus:?}: {fx:?}"
        );
        // Not again for the same question.
        let fx = app.update(Event::Agent(AgentEvent::TextDelta { text: "x".into() }));
        assert!(
            !fx.iter().any(|e| matches!(e, Effect::CallBack(_))),
            "{fx:?}"
        );
        press(&mut app, key(KeyCode::Char('n')), ms(t0, 1000));
        let fx = app.update(done());
        assert_eq!(
            fx.iter().any(|e| matches!(e, Effect::CallBack(_))),
            rings,
            "{focus:?}: {fx:?}"
        );
    }
}

/// Retries of one request update one line in the warning colour instead of adding a line each.
#[test]
fn retries_update_one_line() {
    let t0 = Instant::now();
    let mut app = app(t0);
    let retry = |n: u32| {
        Event::Agent(AgentEvent::Retrying {
            attempt: n,
            delay_ms: 500,
            why: "the server answered 503".into(),
        })
    };
    let before = app.cells.len();
    for n in 1..=3 {
        app.update(retry(n));
    }
    assert_eq!(app.cells.len(), before + 1, "one line for three retries");
    let screen = render(&app, 100, 30);
    assert!(screen.contains("retry 3 in 500 ms"), "{screen}");
    assert!(!screen.contains("retry 1 "), "{screen}");
}

/// Where the terminal did not answer the keyboard protocol query, Shift+Enter arrives as a
/// plain Enter: the hints offer Ctrl+J only.
#[test]
fn without_the_keyboard_protocol_the_hints_offer_ctrl_j() {
    let t0 = Instant::now();
    let mut app = app(t0);
    assert!(render(&app, 100, 30).contains("Shift+Enter/Ctrl+J newline"));
    app.keyboard_enhanced = false;
    let screen = render(&app, 100, 30);
    assert!(
        screen.contains("Ctrl+J newline") && !screen.contains("Shift+Enter"),
        "{screen}"
    );
}

#[test]
fn up_and_down_recall_earlier_prompts() {
    let t0 = Instant::now();
    let mut app = app_with("dark", false, t0);
    for p in ["first", "second"] {
        type_text(&mut app, p, t0);
        press(&mut app, key(KeyCode::Enter), t0);
    }
    press(&mut app, key(KeyCode::Up), t0);
    assert_eq!(composer_text(&app), "second");
    press(&mut app, key(KeyCode::Up), t0);
    assert_eq!(composer_text(&app), "first");
    press(&mut app, key(KeyCode::Down), t0);
    assert_eq!(composer_text(&app), "second");
}

#[test]
fn a_paste_is_inserted_whole_not_sent_line_by_line() {
    let t0 = Instant::now();
    let mut app = app(t0);
    let fx = app.update(Event::Paste("line 1\nline 2\n".into()));
    assert!(fx.is_empty());
    assert_eq!(composer_text(&app), "line 1\nline 2\n");
    // A terminal's bracketed paste carries line breaks as CR (or CRLF): they stay line breaks.
    let mut pasted = crate::support::app(t0);
    pasted.update(Event::Paste("one\rtwo\r\nthree".into()));
    assert_eq!(composer_text(&pasted), "one\ntwo\nthree");
}

#[test]
fn ctrl_u_kills_to_the_start_of_the_line() {
    let t0 = Instant::now();
    let mut app = app(t0);
    type_text(&mut app, "keep", t0);
    press(&mut app, ctrl('j'), t0);
    type_text(&mut app, "drop this", t0);
    press(&mut app, ctrl('u'), t0);
    type_text(&mut app, "new", t0);
    assert_eq!(composer_text(&app), "keep\nnew");
}

#[test]
fn bang_runs_a_command_through_the_router_and_its_result_reaches_the_next_prompt() {
    let t0 = Instant::now();
    let mut app = app(t0);
    type_text(&mut app, "!git status", t0);
    let fx = press(&mut app, key(KeyCode::Enter), t0);
    assert_eq!(
        fx,
        vec![Effect::RunCommand {
            call_id: "you-1".into(),
            command: "git status".into()
        }]
    );
    agent(
        &mut app,
        AgentEvent::ToolCallFinished {
            call_id: "you-1".into(),
            envelope: envelope("you-1", "terminal", ok_output("clean\n", 0), None),
        },
    );
    agent(
        &mut app,
        AgentEvent::Done {
            reason: StopReason::Finished,
            tool_calls: 1,
            message: None,
        },
    );
    type_text(&mut app, "why?", t0);
    let fx = press(&mut app, key(KeyCode::Enter), t0);
    let Effect::Submit(text) = &fx[0] else {
        panic!("{fx:?}")
    };
    assert!(
        text.contains("`git status`") && text.contains("clean") && text.ends_with("why?"),
        "{text}"
    );
}

#[test]
fn slash_commands_and_shift_tab_change_the_mode() {
    let t0 = Instant::now();
    let mut app = app(t0);
    type_text(&mut app, "/mode auto", t0);
    assert_eq!(
        press(&mut app, key(KeyCode::Enter), t0),
        vec![Effect::Mode(ExecutionMode::Auto)]
    );
    assert_eq!(
        press(&mut app, key(KeyCode::BackTab), t0),
        vec![Effect::Mode(ExecutionMode::Safe)]
    );
    assert_eq!(app.status.mode, ExecutionMode::Safe);
    // SAFE to ASK on one press; ASK to AUTO only on a second press within 2 s.
    assert_eq!(
        press(&mut app, key(KeyCode::BackTab), t0),
        vec![Effect::Mode(ExecutionMode::Ask)]
    );
    assert!(press(&mut app, key(KeyCode::BackTab), ms(t0, 100)).is_empty());
    assert_eq!(
        app.status.mode,
        ExecutionMode::Ask,
        "one key never enters AUTO"
    );
    assert!(
        render(&app, 100, 30).contains("Shift+Tab again within 2 s"),
        "{}",
        render(&app, 100, 30)
    );
    // Too late: the second press only arms again.
    assert!(press(&mut app, key(KeyCode::BackTab), ms(t0, 2500)).is_empty());
    assert_eq!(
        press(&mut app, key(KeyCode::BackTab), ms(t0, 3000)),
        vec![Effect::Mode(ExecutionMode::Auto)]
    );
    assert_eq!(
        press(&mut app, key(KeyCode::BackTab), ms(t0, 3100)),
        vec![Effect::Mode(ExecutionMode::Safe)]
    );
    // The session says from when the change applies; the screen says it too.
    app.update(Event::Session(SessionEvent::Applied {
        change: Change::Mode(ExecutionMode::Safe),
        from: AppliesFrom::NextTurn,
    }));
    assert!(
        render(&app, 100, 30).contains("applies from the next request"),
        "{}",
        render(&app, 100, 30)
    );
    type_text(&mut app, "/bogus", t0);
    assert!(press(&mut app, key(KeyCode::Enter), t0).is_empty());
    type_text(&mut app, "/mo", t0);
    press(&mut app, key(KeyCode::Tab), t0);
    assert_eq!(composer_text(&app), "/mode ");
    app.composer = spear::tui::app::composer();
    type_text(&mut app, "/quit", t0);
    assert_eq!(press(&mut app, key(KeyCode::Enter), t0), vec![Effect::Quit]);
}

#[test]
fn esc_cancels_a_running_turn_and_ctrl_c_twice_quits() {
    let t0 = Instant::now();
    let mut app = app(t0);
    type_text(&mut app, "go", t0);
    press(&mut app, key(KeyCode::Enter), t0);
    assert_eq!(press(&mut app, key(KeyCode::Esc), t0), vec![Effect::Cancel]);
    agent(
        &mut app,
        AgentEvent::Done {
            reason: StopReason::Cancelled,
            tool_calls: 0,
            message: None,
        },
    );
    assert!(!app.busy());
    assert!(press(&mut app, ctrl('c'), t0).is_empty());
    assert_eq!(press(&mut app, ctrl('c'), ms(t0, 500)), vec![Effect::Quit]);
    // During a turn Ctrl+C stops the turn, as Esc does, and never quits: not on a second
    // press either.
    let mut app = app_with("dark", true, t0);
    type_text(&mut app, "go", t0);
    press(&mut app, key(KeyCode::Enter), t0);
    assert_eq!(press(&mut app, ctrl('c'), t0), vec![Effect::Cancel]);
    assert_eq!(
        press(&mut app, ctrl('c'), ms(t0, 100)),
        vec![Effect::Cancel]
    );
    assert!(!app.quit);
    // Two presses far apart do not quit.
    let mut app = app_with("dark", true, t0);
    press(&mut app, ctrl('c'), t0);
    assert!(press(&mut app, ctrl('c'), ms(t0, 5000)).is_empty());
}

#[test]
fn f2_opens_the_audit_pane_once_and_toggles_it() {
    let t0 = Instant::now();
    let mut app = app(t0);
    assert_eq!(
        press(&mut app, key(KeyCode::F(2)), t0),
        vec![Effect::AuditOpen]
    );
    assert!(app.audit_open);
    assert!(press(&mut app, key(KeyCode::F(2)), t0).is_empty());
    assert!(!app.audit_open);
    assert!(
        press(&mut app, key(KeyCode::F(2)), t0).is_empty(),
        "the feed is started once"
    );
}

#[test]
fn keys_before_or_just_after_the_dialog_opens_do_not_answer_it() {
    let t0 = Instant::now();
    let mut app = app(t0);
    // Typed before the dialog: goes to the composer, answers nothing.
    press(&mut app, key(KeyCode::Char('y')), t0);
    app.update(Event::Tick(ms(t0, 10)));
    agent(
        &mut app,
        approval(
            "c1",
            "rm -rf build",
            "WORKSPACE_MUTATING",
            &["build"],
            false,
        ),
    );
    assert!(app.confirm.is_some());
    // Within the guard: ignored, the dialog stays.
    assert!(press(&mut app, key(KeyCode::Char('y')), ms(t0, 100)).is_empty());
    assert!(app.confirm.is_some());
    let fx = press(&mut app, key(KeyCode::Char('y')), ms(t0, 400));
    assert_eq!(
        fx,
        vec![Effect::Answer {
            request_id: request_id("c1"),
            decision: ApprovalDecision::Approve
        }]
    );
    assert!(app.confirm.is_none());
    assert_eq!(composer_text(&app), "y");
}

/// A paste never answers a question: with a dialog open it goes nowhere (the composer keeps
/// what it had) and nothing is decided; only a denial's message, once opened with `m`, takes
/// one, its line breaks as spaces.
#[test]
fn a_paste_never_reaches_an_open_question() {
    let t0 = Instant::now();
    let mut app = app(t0);
    agent(
        &mut app,
        approval("c1", "make", "SHELL_COMPLEX", &[], false),
    );
    let fx = app.update(Event::Paste("y\ry\n".into()));
    assert!(fx.is_empty(), "{fx:?}");
    assert!(app.confirm.is_some());
    assert_eq!(composer_text(&app), "");
    assert!(render(&app, 100, 30).contains("the paste was not used"));
    press(&mut app, key(KeyCode::Char('m')), ms(t0, 1000));
    app.update(Event::Paste("use\rcargo".into()));
    assert_eq!(
        press(&mut app, key(KeyCode::Enter), ms(t0, 1000)),
        vec![Effect::Answer {
            request_id: request_id("c1"),
            decision: ApprovalDecision::Deny(Some("use cargo".into()))
        }]
    );
}

/// A person still typing when the question opens answers nothing: every key within the grace
/// period starts it again, and only a key after a quiet 300 ms is taken. Once one is taken, a
/// denial's message is typed at any speed.
#[test]
fn a_dialog_waits_until_the_person_stops_typing() {
    let t0 = Instant::now();
    let mut app = app(t0);
    agent(
        &mut app,
        approval("c1", "make", "SHELL_COMPLEX", &[], false),
    );
    for i in 1..=10 {
        let fx = press(&mut app, key(KeyCode::Char('y')), ms(t0, i * 200));
        assert!(fx.is_empty(), "key {i} answered: {fx:?}");
    }
    assert!(app.confirm.is_some());
    assert!(press(&mut app, key(KeyCode::Char('m')), ms(t0, 2000 + 301)).is_empty());
    type_text(&mut app, "no", ms(t0, 2302));
    assert_eq!(
        press(&mut app, key(KeyCode::Enter), ms(t0, 2303)),
        vec![Effect::Answer {
            request_id: request_id("c1"),
            decision: ApprovalDecision::Deny(Some("no".into()))
        }]
    );
}

#[test]
fn n_denies_m_denies_with_a_message_and_s_answers_allow_for_session() {
    let t0 = Instant::now();
    let mut app = app(t0);
    agent(
        &mut app,
        approval("c1", "make", "SHELL_COMPLEX", &[], false),
    );
    assert_eq!(
        press(&mut app, key(KeyCode::Char('n')), ms(t0, 1000)),
        vec![Effect::Answer {
            request_id: request_id("c1"),
            decision: ApprovalDecision::Deny(None)
        }]
    );
    agent(
        &mut app,
        approval("c2", "make", "SHELL_COMPLEX", &[], false),
    );
    press(&mut app, key(KeyCode::Char('m')), ms(t0, 2000));
    type_text(&mut app, "use cargo", ms(t0, 2000));
    assert_eq!(
        press(&mut app, key(KeyCode::Enter), ms(t0, 2000)),
        vec![Effect::Answer {
            request_id: request_id("c2"),
            decision: ApprovalDecision::Deny(Some("use cargo".into()))
        }]
    );
    agent(
        &mut app,
        approval("c3", "make", "SHELL_COMPLEX", &[], false),
    );
    // `s` allows this exact command for the session: a session rule where one can name it
    // (the router keeps it: tests/tools/rules.rs), the dialog only says so in its answer.
    assert_eq!(
        press(&mut app, key(KeyCode::Char('s')), ms(t0, 3000)),
        vec![Effect::Answer {
            request_id: request_id("c3"),
            decision: ApprovalDecision::Always {
                rule: "make".into(),
                scope: SaveScope::Session
            }
        }]
    );
    assert!(app.confirm.is_none());
    // A line no rule can name: `s` keeps a grant of exactly its text.
    agent(
        &mut app,
        approval("c4", "make; make install", "SHELL_COMPLEX", &[], false),
    );
    assert_eq!(
        press(&mut app, key(KeyCode::Char('s')), ms(t0, 3500)),
        vec![Effect::Answer {
            request_id: request_id("c4"),
            decision: ApprovalDecision::ApproveForSession
        }]
    );
    // `a` shows the narrowest rule first, wider ones one step at a time, and asks where.
    agent(
        &mut app,
        approval(
            "c6",
            "cargo test -p spear",
            "WORKSPACE_MUTATING",
            &[],
            false,
        ),
    );
    assert!(press(&mut app, key(KeyCode::Char('a')), ms(t0, 4000)).is_empty());
    let shown = |app: &App| {
        let c = app.confirm.as_ref().unwrap();
        c.view.always[c.choosing.unwrap()].clone()
    };
    assert_eq!(shown(&app), "cargo test -p spear");
    press(&mut app, key(KeyCode::Right), ms(t0, 4000));
    assert_eq!(shown(&app), "cargo test -p *");
    press(&mut app, key(KeyCode::Right), ms(t0, 4000));
    assert_eq!(shown(&app), "cargo test *");
    press(&mut app, key(KeyCode::Right), ms(t0, 4000));
    assert_eq!(
        shown(&app),
        "cargo test *",
        "never wider than program and one word"
    );
    press(&mut app, key(KeyCode::Left), ms(t0, 4000));
    // Esc goes back to the question; `a` again starts at the narrowest.
    press(&mut app, key(KeyCode::Esc), ms(t0, 4000));
    assert!(app.confirm.as_ref().unwrap().choosing.is_none());
    press(&mut app, key(KeyCode::Char('a')), ms(t0, 4000));
    press(&mut app, key(KeyCode::Right), ms(t0, 4000));
    assert_eq!(
        press(&mut app, key(KeyCode::Char('g')), ms(t0, 4000)),
        vec![Effect::Answer {
            request_id: request_id("c6"),
            decision: ApprovalDecision::Always {
                rule: "cargo test -p *".into(),
                scope: SaveScope::Global
            }
        }]
    );
    // Every approval the router sends opens the dialog.
    agent(
        &mut app,
        approval("c5", "make install", "SHELL_COMPLEX", &[], false),
    );
    assert!(app.confirm.is_some());
    // Esc denies.
    assert_eq!(
        press(&mut app, key(KeyCode::Esc), ms(t0, 5000)),
        vec![Effect::Answer {
            request_id: request_id("c5"),
            decision: ApprovalDecision::Deny(None)
        }]
    );
}

#[test]
fn a_call_the_routers_session_grant_answered_is_said_so() {
    let mut app = app(Instant::now());
    let started = |id: &str| AgentEvent::ToolCallStarted {
        call_id: id.into(),
        name: "terminal".into(),
        arguments: serde_json::json!({"command": "make"}),
    };
    let finished = |id: &str, by| {
        let mut env = envelope(id, "terminal", ok_output("", 0), None);
        env.decided_by = by;
        AgentEvent::ToolCallFinished {
            call_id: id.into(),
            envelope: env,
        }
    };
    let notices = |app: &spear::tui::app::App| -> Vec<String> {
        app.cells
            .items
            .iter()
            .filter_map(|c| match &c.kind {
                spear::tui::cells::CellKind::Notice { text, .. } => Some(text.clone()),
                _ => None,
            })
            .collect()
    };
    agent(&mut app, started("c1"));
    agent(&mut app, finished("c1", Some(DecidedBy::Person)));
    assert!(notices(&app).is_empty());
    agent(&mut app, started("c2"));
    agent(&mut app, finished("c2", Some(DecidedBy::SessionGrant)));
    assert_eq!(notices(&app), ["allowed for this session (s): make"]);
}

#[test]
fn a_long_session_keeps_only_visible_cells_laid_out() {
    let t0 = Instant::now();
    let mut app = app(t0);
    for i in 0..2000 {
        agent(
            &mut app,
            AgentEvent::TextDelta {
                text: format!("message {i}"),
            },
        );
        agent(
            &mut app,
            AgentEvent::Done {
                reason: StopReason::Finished,
                tool_calls: 0,
                message: None,
            },
        );
    }
    let screen = render(&app, 80, 24);
    assert!(screen.contains("message 1999"), "{screen}");
    press(&mut app, key(KeyCode::PageUp), t0);
    let up = render(&app, 80, 24);
    assert!(
        !up.contains("message 1999") && up.contains("message 199"),
        "{up}"
    );
}

#[test]
fn resume_lists_the_sessions_and_reopens_the_chosen_one_with_its_conversation_and_mode() {
    use spear::agent::model::ChatMessage;
    use spear::agent::transcript::{LoadedSession, SessionMeta, SessionSummary};
    let t0 = Instant::now();
    let mut app = app(t0);
    type_text(&mut app, "/resume", t0);
    assert_eq!(
        press(&mut app, key(KeyCode::Enter), t0),
        vec![Effect::ListSessions]
    );
    let summary = |id: &str, title: &str| SessionSummary {
        id: id.into(),
        created: "2026-12-01T09:00:00Z".into(),
        updated: "2026-12-01T09:30:00Z".into(),
        model: "qwen3-coder".into(),
        mode: "auto".into(),
        messages: 4,
        title: title.into(),
    };
    app.update(Event::Session(SessionEvent::Sessions(vec![
        summary("s-new", "add a CHANGELOG"),
        summary("s-old", "fix the parser"),
    ])));
    insta::assert_snapshot!("resume_picker", render(&app, 80, 24));
    press(&mut app, key(KeyCode::Down), t0);
    assert_eq!(
        press(&mut app, key(KeyCode::Enter), t0),
        vec![Effect::Resume("s-old".into())]
    );
    app.update(Event::Session(SessionEvent::Loaded(Box::new(
        LoadedSession {
            meta: SessionMeta {
                id: "s-old".into(),
                workspace: "/work/demo".into(),
                created: "2026-12-01T09:00:00Z".into(),
                provider: "local".into(),
                model: "qwen3-coder".into(),
                mode: "auto".into(),
            },
            messages: vec![
                ChatMessage::User {
                    content: "fix the parser".into(),
                },
                ChatMessage::Assistant {
                    content: None,
                    tool_calls: vec![spear::agent::model::ToolCallRequest {
                        id: "c1".into(),
                        name: "terminal".into(),
                        arguments: "{\"command\":\"cargo test --lib parser\"}".into(),
                    }],
                    reasoning: None,
                },
                ChatMessage::Tool {
                    tool_call_id: "c1".into(),
                    content: "[exit code 101]\ntest heredoc ... FAILED\n".into(),
                },
                ChatMessage::Assistant {
                    content: Some("Fixed: the here-doc case.".into()),
                    tool_calls: Vec::new(),
                    reasoning: None,
                },
            ],
            torn: None,
        },
    ))));
    assert_eq!(app.status.mode, ExecutionMode::Auto);
    let screen = render(&app, 80, 24);
    assert!(screen.contains("fix the parser") && screen.contains("Fixed: the here-doc case."));
    assert!(screen.contains("resumed session s-old"), "{screen}");
    // The tool call is a cell again, with what the model was told of it.
    assert!(
        screen.contains("✗ terminal cargo test --lib parser  from the transcript · exit 101"),
        "{screen}"
    );
    assert!(screen.contains("test heredoc ... FAILED"), "{screen}");
}

#[test]
fn help_is_generated_from_the_commands_and_bindings() {
    let t0 = Instant::now();
    let mut app = app(t0);
    app.update(Event::Resize(100, 40));
    type_text(&mut app, "/help", t0);
    press(&mut app, key(KeyCode::Enter), t0);
    let screen = render(&app, 100, 40);
    for s in [
        "/mode safe|ask|auto",
        "/theme",
        "!COMMAND",
        "Shift+Tab",
        "whole output",
    ] {
        assert!(screen.contains(s), "{s}:\n{screen}");
    }
    insta::assert_snapshot!("help_popup", screen);
    press(&mut app, key(KeyCode::Esc), t0);
    assert!(app.popup.is_none());
}

#[test]
fn slash_model_name_switches_the_model_and_the_status_bar_follows() {
    let t0 = Instant::now();
    let mut app = app(t0);
    type_text(&mut app, "/model gpt-other", t0);
    let fx = press(&mut app, key(KeyCode::Enter), t0);
    assert_eq!(fx, vec![Effect::Model("gpt-other".into())]);
    app.update(Event::Session(SessionEvent::ModelChanged {
        provider: "default".into(),
        model: "gpt-other".into(),
    }));
    assert_eq!(
        app.status.model,
        Some(("default".to_string(), "gpt-other".to_string()))
    );
    assert!(render(&app, 100, 30).contains("gpt-other"));
    // Without a name it shows the current one and asks nothing of the driver.
    type_text(&mut app, "/model", t0);
    assert!(press(&mut app, key(KeyCode::Enter), t0).is_empty());
}

#[test]
fn slash_standard_engages_and_disengages_and_the_status_bar_follows() {
    let t0 = Instant::now();
    let mut app = app(t0);
    type_text(&mut app, "/standard fire-code", t0);
    let fx = press(&mut app, key(KeyCode::Enter), t0);
    assert_eq!(fx, vec![Effect::Standard(Some("fire-code".into()))]);
    app.update(Event::Session(SessionEvent::StandardChanged {
        name: Some("fire-code".into()),
        note: "fire-code engaged".into(),
    }));
    assert_eq!(app.status.standard.as_deref(), Some("fire-code"));
    let screen = render(&app, 120, 30);
    assert!(
        screen.contains("std fire-code") && screen.contains("fire-code engaged"),
        "{screen}"
    );
    type_text(&mut app, "/standard off", t0);
    let fx = press(&mut app, key(KeyCode::Enter), t0);
    assert_eq!(fx, vec![Effect::Standard(Some("off".into()))]);
    app.update(Event::Session(SessionEvent::StandardChanged {
        name: None,
        note: "no standard engaged".into(),
    }));
    assert!(!render(&app, 120, 30).contains("std fire-code"));
    type_text(&mut app, "/standard", t0);
    assert_eq!(
        press(&mut app, key(KeyCode::Enter), t0),
        vec![Effect::Standard(None)]
    );
    // A classification and a pass are said in the conversation.
    app.update(Event::Agent(spear::agent::event::AgentEvent::PassStarted {
        pass: spear::tools::exposure::Pass::Normative,
        surface: spear::tools::spec::Surface::Normative,
        tools: vec!["standard.read".into()],
    }));
    assert!(render(&app, 120, 30).contains("normative pass: tools standard.read"));
}

#[test]
fn slash_model_gives_a_session_without_a_model_one() {
    let t0 = Instant::now();
    let mut app = app_with("dark", false, t0);
    assert!(!app.has_model);
    app.update(Event::Session(SessionEvent::ModelChanged {
        provider: "default".into(),
        model: "local".into(),
    }));
    assert!(app.has_model);
    type_text(&mut app, "hello", t0);
    assert_eq!(
        press(&mut app, key(KeyCode::Enter), t0),
        vec![Effect::Submit("hello".into())]
    );
}

#[test]
fn a_cells_duration_is_the_calls_not_the_time_the_dialog_was_open() {
    let t0 = Instant::now();
    let mut app = app(t0);
    app.update(Event::Tick(t0));
    agent(
        &mut app,
        AgentEvent::ToolCallStarted {
            call_id: "c1".into(),
            name: "terminal".into(),
            arguments: serde_json::json!({"command": "touch x"}),
        },
    );
    agent(
        &mut app,
        approval("c1", "touch x", "WORKSPACE_MUTATING", &["x"], false),
    );
    // The person reads for five seconds, then allows it; the command takes 0.2 s.
    press(&mut app, key(KeyCode::Char('y')), ms(t0, 5_000));
    app.update(Event::Tick(ms(t0, 5_200)));
    agent(
        &mut app,
        AgentEvent::ToolCallFinished {
            call_id: "c1".into(),
            envelope: envelope("c1", "terminal", ok_output("", 0), None),
        },
    );
    let d = app.cells.tool("c1").unwrap().duration.unwrap();
    assert!(d <= std::time::Duration::from_millis(300), "{d:?}");
}

#[test]
fn a_chosen_theme_is_applied_and_kept_for_the_next_runs() {
    let t0 = Instant::now();
    let mut app = app(t0);
    type_text(&mut app, "/theme light", t0);
    let fx = press(&mut app, key(KeyCode::Enter), t0);
    assert_eq!(fx, vec![Effect::KeepTheme("light".into())]);
    assert_eq!(app.theme.name, "light");
    type_text(&mut app, "/theme nope", t0);
    let fx = press(&mut app, key(KeyCode::Enter), t0);
    assert!(fx.is_empty(), "an unknown theme is not kept: {fx:?}");
}

fn finished_tool(app: &mut App, id: &str, tool: &str, args: serde_json::Value, r: ToolResult) {
    agent(
        app,
        AgentEvent::ToolCallStarted {
            call_id: id.into(),
            name: tool.into(),
            arguments: args,
        },
    );
    agent(
        app,
        AgentEvent::ToolCallFinished {
            call_id: id.into(),
            envelope: envelope(id, tool, r, None),
        },
    );
}

#[test]
fn read_file_numbers_a_search_names_its_pattern_and_a_reason_keeps_its_lines() {
    let t0 = Instant::now();
    let mut app = app(t0);
    finished_tool(
        &mut app,
        "r1",
        "read_file",
        serde_json::json!({"path": "src/main.rs"}),
        ToolResult::ok("     1\tfn main() {\n     2\t}\n"),
    );
    finished_tool(
        &mut app,
        "s1",
        "search_files",
        serde_json::json!({"pattern": "TODO", "path": "src"}),
        ToolResult::ok("src/main.rs:1: TODO\n"),
    );
    let mut failed = ToolResult::refused(
        ToolStatus::Failed,
        "the old text is not in the file.\nexpected:\n  foo\nfound:\n  bar",
    );
    failed.stdout.clear();
    finished_tool(
        &mut app,
        "p1",
        "patch",
        serde_json::json!({"path": "src/main.rs"}),
        failed,
    );
    // read_file and search cells start folded.
    for c in &mut app.cells.items {
        c.folded = false;
        c.touch();
    }
    let screen = render(&app, 80, 30);
    assert!(screen.contains("│ 1 fn main() {"), "{screen}");
    assert!(screen.contains("search_files TODO  in src"), "{screen}");
    assert!(
        screen.contains("\n  expected:") || screen.contains("  expected:  "),
        "{screen}"
    );
    assert!(
        !screen.contains("file.expected"),
        "the reason's lines were glued: {screen}"
    );
}

#[test]
fn the_running_spinner_turns() {
    let t0 = Instant::now();
    let mut app = app(t0);
    agent(
        &mut app,
        AgentEvent::ToolCallStarted {
            call_id: "c1".into(),
            name: "terminal".into(),
            arguments: serde_json::json!({"command": "sleep 5"}),
        },
    );
    let first = |s: &str| s.lines().next().unwrap_or("").to_string();
    app.update(Event::Tick(ms(t0, 100)));
    let a = first(&render(&app, 80, 24));
    app.update(Event::Tick(ms(t0, 400)));
    let b = first(&render(&app, 80, 24));
    assert_ne!(a, b, "the spinner did not move");
}

#[test]
fn a_copy_is_said_on_the_status_line_not_added_to_the_conversation() {
    let t0 = Instant::now();
    let mut app = app(t0);
    agent(
        &mut app,
        AgentEvent::TextDelta {
            text: "an answer".into(),
        },
    );
    press(&mut app, key(KeyCode::Tab), t0);
    let cells = app.cells.len();
    let fx = press(&mut app, key(KeyCode::Char('y')), t0);
    assert!(
        matches!(fx.as_slice(), [Effect::Copy(t)] if t == "an answer"),
        "{fx:?}"
    );
    assert_eq!(app.cells.len(), cells, "the copy added a cell");
    assert!(render(&app, 80, 24).contains("copied the cell"));
    app.update(Event::Tick(ms(t0, 4_000)));
    assert!(!render(&app, 80, 24).contains("copied the cell"));
}

#[test]
fn the_view_follows_the_selected_cell() {
    let t0 = Instant::now();
    let mut app = app(t0);
    for i in 0..40 {
        app.notice(spear::tui::cells::NoticeKind::Info, format!("notice {i}"));
    }
    press(&mut app, key(KeyCode::Tab), t0);
    for _ in 0..30 {
        press(&mut app, key(KeyCode::Up), t0);
    }
    assert_eq!(app.focused_cell, Some(9));
    let screen = render(&app, 80, 24);
    assert!(
        screen.contains("▌ notice 9"),
        "the selected cell is off screen:\n{screen}"
    );
    for _ in 0..30 {
        press(&mut app, key(KeyCode::Down), t0);
    }
    assert!(render(&app, 80, 24).contains("▌ notice 39"));
    assert_eq!(app.scroll, 0);
}

#[test]
fn an_empty_enter_sends_the_queued_message_now_by_stopping_the_turn() {
    let t0 = Instant::now();
    let mut app = app(t0);
    type_text(&mut app, "first", t0);
    press(&mut app, key(KeyCode::Enter), t0);
    type_text(&mut app, "second", t0);
    press(&mut app, key(KeyCode::Enter), t0);
    let hints = render(&app, 100, 30);
    assert!(hints.contains("Enter send queued now"), "{hints}");
    assert!(
        !hints.contains("Enter send ·"),
        "two meanings for Enter: {hints}"
    );
    assert_eq!(
        press(&mut app, key(KeyCode::Enter), t0),
        vec![Effect::Cancel]
    );
    let fx = app.update(Event::Agent(AgentEvent::Done {
        reason: StopReason::Cancelled,
        tool_calls: 0,
        message: None,
    }));
    assert!(fx.contains(&Effect::Submit("second".into())), "{fx:?}");
}

#[test]
fn a_paste_longer_than_the_screen_is_folded_in_the_composer_and_sent_whole() {
    let t0 = Instant::now();
    let mut app = app(t0);
    let log: String = (1..=200).map(|i| format!("log line {i}\r\n")).collect();
    type_text(&mut app, "why does this fail? ", t0);
    app.update(Event::Paste(log.clone()));
    let screen = render(&app, 80, 24);
    assert!(screen.contains("[paste 1: 200 lines]"), "{screen}");
    assert!(!screen.contains("log line 1"), "{screen}");
    let fx = press(&mut app, key(KeyCode::Enter), t0);
    let whole = log.replace("\r\n", "\n");
    assert_eq!(
        fx,
        vec![Effect::Submit(format!(
            "why does this fail? {}",
            whole.trim_end()
        ))]
    );
    // A short paste goes in as text.
    app.update(Event::Agent(AgentEvent::Done {
        reason: StopReason::Finished,
        tool_calls: 0,
        message: None,
    }));
    app.update(Event::Paste("two\nlines".into()));
    assert_eq!(composer_text(&app), "two\nlines");
}

/// Issue 22, item 4: a DANGEROUS request (which authorization refuses before asking) can only
/// be declined, should one ever reach the dialog: no key allows it, and the hints offer none.
#[test]
fn a_dangerous_request_cannot_be_allowed_from_the_dialog() {
    let t0 = Instant::now();
    let mut app = app(t0);
    agent(
        &mut app,
        approval("c9", "rm -rf /", "DANGEROUS", &[], false),
    );
    for k in ['y', 's', 'a'] {
        assert!(
            press(&mut app, key(KeyCode::Char(k)), ms(t0, 1000)).is_empty(),
            "`{k}` must answer nothing"
        );
    }
    let hints = app.confirm.as_ref().unwrap().hints();
    assert!(hints.iter().all(|(k, _)| !k.contains('y')), "{hints:?}");
    assert_eq!(
        press(&mut app, key(KeyCode::Char('n')), ms(t0, 2000)),
        vec![Effect::Answer {
            request_id: request_id("c9"),
            decision: ApprovalDecision::Deny(None)
        }]
    );
}

#[test]
fn undo_asks_the_session_and_the_status_bar_counts_what_can_be_taken_back() {
    let t0 = Instant::now();
    let mut app = app(t0);
    type_text(&mut app, "/undo 2 force", t0);
    assert_eq!(
        press(&mut app, key(KeyCode::Enter), t0),
        vec![Effect::Undo {
            turn: Some(2),
            force: true
        }]
    );
    app.update(Event::Session(SessionEvent::Undoable(3)));
    let screen = render(&app, 120, 24);
    assert!(screen.contains("3 changes to undo"), "{screen}");
    app.update(Event::Session(SessionEvent::Note(
        "Took back turn 2 of session s.\n  restored      src/a.rs".into(),
    )));
    app.update(Event::Session(SessionEvent::Undoable(0)));
    let screen = render(&app, 120, 24);
    assert!(screen.contains("restored      src/a.rs"), "{screen}");
    assert!(!screen.contains("to undo"), "{screen}");
}

/// Issue 23: `/rewind 2 files force` asks the session; when the conversation went back, the
/// screen shows what is left and the request's words wait in the composer to send again, but
/// never over what the person was writing.
#[test]
fn rewind_asks_the_session_and_puts_the_request_back_in_the_composer() {
    let t0 = Instant::now();
    let mut app = app(t0);
    type_text(&mut app, "/rewind 2 files force", t0);
    assert_eq!(
        press(&mut app, key(KeyCode::Enter), t0),
        vec![Effect::Rewind {
            request: Some(2),
            what: spear::agent::session::RewindWhat::Files,
            force: true
        }]
    );
    let rewound = |text: &str| {
        Event::Session(SessionEvent::Rewound {
            request: 2,
            text: text.into(),
            messages: vec![
                spear::agent::model::ChatMessage::User {
                    content: "first question".into(),
                },
                spear::agent::model::ChatMessage::Assistant {
                    content: Some("first answer".into()),
                    tool_calls: vec![],
                    reasoning: None,
                },
            ],
        })
    };
    app.update(rewound("second question"));
    assert_eq!(app.composer.lines().join("\n"), "second question");
    let screen = render(&app, 120, 24);
    assert!(screen.contains("first answer"), "{screen}");
    assert!(screen.contains("just before request 2"), "{screen}");

    type_text(&mut app, " and more", t0);
    app.update(rewound("other words"));
    assert_eq!(
        app.composer.lines().join("\n"),
        "second question and more",
        "the person's text was kept"
    );
}

/// On a screen too small for the whole help (60 columns by 30 rows), it opens where it
/// scrolls, so no line of it is cut off.
#[test]
fn help_too_tall_for_the_screen_opens_in_the_pager() {
    let t0 = Instant::now();
    let mut app = app(t0);
    app.update(Event::Resize(60, 30));
    type_text(&mut app, "/help", t0);
    press(&mut app, key(KeyCode::Enter), t0);
    assert!(app.popup.is_none() && app.pager.is_some());
    press(&mut app, key(KeyCode::Char('G')), t0);
    let screen = render(&app, 60, 30);
    assert!(screen.contains("cancel the running turn"), "{screen}");
}
