//! The audit log a test's router wrote for a workspace, parsed record by record (none when
//! nothing was written).
#![allow(dead_code)]

use std::path::Path;

use spear::harness::audit::{AuditPaths, AuditRecord};

pub fn records(state: &Path, project: &Path) -> Vec<AuditRecord> {
    std::fs::read_to_string(AuditPaths::new(state, project).log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
