//! `ToolRegistry`: every tool Spear knows, each a spec and a handler under a unique name. The
//! registry holds both surfaces; `ToolExposurePolicy` decides which one a turn sees.

use std::collections::BTreeMap;
use std::sync::Arc;

use thiserror::Error;

use crate::tools::handler::ToolHandler;
use crate::tools::spec::ToolSpec;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum RegistryError {
    #[error("a tool named `{0}` is already registered")]
    Duplicate(String),
}

/// A spec and the handler that implements it.
#[derive(Clone)]
pub struct RegisteredTool {
    pub spec: ToolSpec,
    pub handler: Arc<dyn ToolHandler>,
}

/// Tools by name (ordered, so listings are stable).
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, RegisteredTool>,
}

impl ToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Refuses a name whose wire form (`standard.search` -> `standard_search`) another tool
    /// already has: a model's call must name exactly one tool.
    pub fn register(
        &mut self,
        spec: ToolSpec,
        handler: Arc<dyn ToolHandler>,
    ) -> Result<(), RegistryError> {
        let wire = spec.wire_name();
        if self.tools.contains_key(&spec.name)
            || self.tools.values().any(|t| t.spec.wire_name() == wire)
        {
            return Err(RegistryError::Duplicate(spec.name));
        }
        self.tools
            .insert(spec.name.clone(), RegisteredTool { spec, handler });
        Ok(())
    }

    /// The tool `name`, by its spec name or by its wire name (what a model calls it).
    pub fn get(&self, name: &str) -> Option<&RegisteredTool> {
        self.tools
            .get(name)
            .or_else(|| self.tools.values().find(|t| t.spec.wire_name() == name))
    }

    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.tools.values().map(|t| &t.spec)
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}
