//! Properties: the SSE parser gives the same events however the bytes are split into reads
//! (any mix of LF, CR and CRLF, comments, multi-byte text, a final line without its end); and a
//! whole capture assembles to the same response however it is split.

use proptest::prelude::*;
use spear::agent::model::{ModelResponse, StreamDelta};
use spear::agent::provider::StreamAssembler;
use spear::agent::provider::sse::{SseEvent, SseParser};

use crate::common::captures;

fn line() -> impl Strategy<Value = String> {
    let text = "[a-zA-Z0-9 :{}\",\\[\\]é😊×]{0,12}";
    prop_oneof![
        text.prop_map(|t| format!("data: {t}")),
        text.prop_map(|t| format!("data:{t}")),
        Just("data".to_string()),
        Just(String::new()),
        text.prop_map(|t| format!(": {t}")),
        "[a-z]{0,6}".prop_map(|t| format!("event: {t}")),
        Just("id: 1".to_string()),
        Just("data: [DONE]".to_string()),
    ]
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    let ending = prop_oneof![Just("\n"), Just("\r"), Just("\r\n")];
    (
        prop::collection::vec((line(), ending), 0..30),
        any::<bool>(),
    )
        .prop_map(|(lines, bom)| {
            let mut body = if bom {
                "\u{feff}".to_string()
            } else {
                String::new()
            };
            for (line, ending) in lines {
                body.push_str(&line);
                body.push_str(ending);
            }
            body.into_bytes()
        })
}

/// Split `bytes` at the given cut points (taken modulo the length, sorted).
fn pieces(bytes: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut cuts: Vec<usize> = cuts
        .iter()
        .map(|c| if bytes.is_empty() { 0 } else { c % bytes.len() })
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut out = Vec::new();
    let mut start = 0;
    for cut in cuts.into_iter().chain([bytes.len()]) {
        out.push(bytes[start..cut].to_vec());
        start = cut;
    }
    out
}

fn parse(parts: &[Vec<u8>]) -> Vec<SseEvent> {
    let mut parser = SseParser::new();
    let mut events = Vec::new();
    for part in parts {
        parser.feed(part, &mut events).unwrap();
    }
    parser.finish(&mut events).unwrap();
    events
}

fn assemble(parts: &[Vec<u8>]) -> Result<ModelResponse, String> {
    let mut sink = |_: StreamDelta| {};
    let mut stream = StreamAssembler::new();
    for part in parts {
        stream
            .push_bytes(part, &mut sink)
            .map_err(|e| e.to_string())?;
    }
    stream
        .finish(&mut sink)
        .map_err(|e| e.to_string())
        .map(|mut r| {
            for call in &mut r.tool_calls {
                if call.id.starts_with("call_spear_") {
                    call.id = "<invented>".into();
                }
            }
            r
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn sse_events_do_not_depend_on_the_split(
        body in body(),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
    ) {
        let whole = parse(std::slice::from_ref(&body));
        prop_assert_eq!(parse(&pieces(&body, &cuts)), whole.clone());
        let bytes: Vec<Vec<u8>> = body.iter().map(|b| vec![*b]).collect();
        prop_assert_eq!(parse(&bytes), whole);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_capture_assembles_the_same_however_it_is_split(
        which in 0usize..33,
        cuts in prop::collection::vec(any::<usize>(), 1..40),
    ) {
        let captures = captures();
        let body = &captures[which % captures.len()].1;
        let whole = assemble(std::slice::from_ref(body));
        prop_assert_eq!(assemble(&pieces(body, &cuts)), whole);
    }
}
