//! Fuzz `classify`: any bytes, taken as lossy UTF-8, must give an assessment with a reason and
//! never panic, hang or overflow.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spear::harness::command_policy::CommandPolicy;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let assessment = CommandPolicy::default().classify(&text);
    assert!(!assessment.reasons.is_empty());
});
