//! An `Approver` for tests: answers every question the same way and keeps each one asked.

#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use spear::harness::command_policy::{ApprovalDecision, ApprovalRequest, Approver};

pub struct ScriptedApprover {
    pub answer: ApprovalDecision,
    pub asked: Mutex<Vec<ApprovalRequest>>,
}

impl ScriptedApprover {
    pub fn new(answer: ApprovalDecision) -> Arc<Self> {
        Arc::new(ScriptedApprover {
            answer,
            asked: Mutex::new(Vec::new()),
        })
    }
}

impl Approver for ScriptedApprover {
    fn approve(&self, request: &ApprovalRequest) -> ApprovalDecision {
        self.asked.lock().unwrap().push(request.clone());
        self.answer.clone()
    }
}
