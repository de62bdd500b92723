//! Exposure follows `web_enabled` alone: the policy table over every setting, the coding core's
//! prompt, and whole requests through the agent loop worded every way, including the two that
//! a keyword rule once missed ("please get the complete Code-G pdf", a bare "fetch https://…").

use std::collections::BTreeSet;
use std::sync::Arc;

use spear::agent::runtime::{AgentRuntime, RuntimeOptions};
use spear::harness::primitives::ExecutionMode;
use spear::tools::coding::CODING_TOOLS;
use spear::tools::exposure::{ExposureSettings, ToolExposurePolicy};
use spear::tools::spec::Surface;
use spear::tools::web::WEB_TOOLS;

use crate::loop_support::{ScriptedModel, calls, run, text};
use crate::pdf;
use crate::server::{Route, WebServer};
use crate::support::{Project, loopback_only};

const WORDINGS: [&str; 5] = [
    "please get the complete Code-G pdf",
    "fetch https://codes.example/code-g.pdf",
    "what does clause 4.2 require?",
    "fix the failing test in src/lib.rs",
    "look up the latest release online",
];

#[test]
fn the_policy_offers_the_pair_exactly_on_the_normative_surface_with_the_web_on() {
    let p = Project::new();
    for web_enabled in [false, true] {
        let router = p.router(web_enabled, loopback_only());
        for s in ExposureSettings::all() {
            let view = ToolExposurePolicy::view(router.registry(), &s);
            let names: BTreeSet<&str> = view.names.iter().map(String::as_str).collect();
            let web: BTreeSet<&str> = names.intersection(&WEB_TOOLS.into()).copied().collect();
            let expected_web = s.standard_engaged && s.web_enabled;
            assert_eq!(web.len() == 2, expected_web, "{s:?}: {names:?}");
            assert!(
                web.is_empty() || web.len() == 2,
                "{s:?}: the pair goes together"
            );
            if view.surface == Surface::Coding {
                assert_eq!(names, CODING_TOOLS.into_iter().collect(), "{s:?}");
            } else {
                assert!(CODING_TOOLS.iter().all(|t| !names.contains(t)), "{s:?}");
            }
        }
    }
}

#[test]
fn both_specs_have_schemas_and_read_in_every_mode() {
    for spec in spear::tools::web::specs() {
        assert!(
            spec.needs_web && !spec.reaches_working_tree && !spec.mutates,
            "{}",
            spec.name
        );
        assert_eq!(spec.surface, Surface::Normative);
        assert!(
            ExecutionMode::ALL.iter().all(|m| spec.runs_in(*m)),
            "{}",
            spec.name
        );
        let f = spec.to_function();
        assert_eq!(f["function"]["parameters"]["type"], "object");
        assert!(
            f["function"]["parameters"]["required"]
                .as_array()
                .unwrap()
                .len()
                == 1
        );
    }
}

fn options(p: &Project) -> RuntimeOptions {
    RuntimeOptions {
        max_tool_calls: 10,
        response_max_tokens: 1000,
        context_window: None,
        cwd: p.project.clone(),
    }
}

#[tokio::test]
async fn every_wording_sees_the_same_tools_and_the_web_section_exactly_when_enabled() {
    let p = Project::new();
    for web_enabled in [false, true] {
        for objective in WORDINGS {
            let model = ScriptedModel::new(vec![text("ok")]);
            let router = Arc::new(p.router(web_enabled, loopback_only()));
            let mut rt = AgentRuntime::new(model.clone(), router, options(&p));
            run(&mut rt, objective, ExecutionMode::Safe).await;
            let req = &model.requests()[0];
            let tools: BTreeSet<&str> = req.tools.iter().map(|t| t.name.as_str()).collect();
            assert_eq!(tools, CODING_TOOLS.into_iter().collect(), "{objective}");
            let system = serde_json::to_string(&req.messages[0]).unwrap();
            assert_eq!(
                system.contains("spear-capability run fetch_url URL"),
                web_enabled,
                "web {web_enabled}, {objective:?}"
            );
        }
    }
}

#[tokio::test]
async fn a_bare_request_for_the_pdf_is_fetched_through_the_host_command() {
    let p = Project::new();
    let s = WebServer::start("127.0.0.1");
    s.route(
        "/code-g.pdf",
        Route::Fixed(200, "application/pdf", pdf::numbered(20)),
    );
    let command = format!(
        "{{\"command\": \"spear-capability run fetch_url {}\"}}",
        s.url("/code-g.pdf")
    );
    let model = ScriptedModel::new(vec![
        calls(&[("c1", "terminal", &command)]),
        text("Here is the first part of Code-G."),
    ]);
    let router = Arc::new(p.router(true, loopback_only()));
    let mut rt = AgentRuntime::new(model.clone(), router, options(&p));
    run(
        &mut rt,
        "please get the complete Code-G pdf",
        ExecutionMode::Safe,
    )
    .await;
    let second = serde_json::to_string(&model.requests()[1].messages).unwrap();
    assert!(second.contains("marker-1\\n"), "{second}");
    assert!(second.contains("next pages: \\\"13-20\\\""), "{second}");
    assert_eq!(s.hits("/code-g.pdf"), 1);
    assert!(second.contains("PDF of 20 pages"), "{second}");
}
