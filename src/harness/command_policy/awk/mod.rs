//! awk programs judged by parsing them: a lexer and recursive-descent parser for the union of
//! the POSIX, gawk, mawk and busybox grammars, and a walk of the syntax tree that lists every
//! construct any of them gives a side effect. A program is read-only only when it was parsed
//! completely and that list is empty; text the parser does not accept is never read-only.

mod args;
mod ast;
mod effects;
mod expr;
mod lexer;
mod parser;

pub(crate) use args::{ArgFinding, Invocation};
pub(crate) use effects::Effect;

/// What an awk program does besides reading and printing.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct AwkFacts {
    pub effects: Vec<Effect>,
    /// Why the program could not be read, when it could not.
    pub not_understood: Option<String>,
}

/// Output names that write no file of their own: the discard device, and the standard streams,
/// which gawk and mawk write to descriptors 1 and 2 and busybox opens by name, reaching the
/// same open file (a file there was opened by a redirection of the line, judged on its own).
const STREAMS: &[&str] = &["/dev/null", "/dev/stdout", "/dev/stderr"];

impl AwkFacts {
    #[cfg(test)]
    pub fn read_only(&self) -> bool {
        self.effects.is_empty() && self.not_understood.is_none()
    }

    /// Read-only but for output to the discard device or the standard streams.
    pub fn prints_only(&self) -> bool {
        self.not_understood.is_none()
            && self
                .effects
                .iter()
                .all(|e| matches!(e, Effect::Writes(f) if STREAMS.contains(&f.as_str())))
    }
}

/// Parse `program` and list its side effects.
pub(crate) fn program(program: &str) -> AwkFacts {
    match parser::parse(program) {
        Ok((items, defined)) => {
            let mut walk = effects::Walk {
                defined: &defined,
                effects: Vec::new(),
                unknown: None,
            };
            walk.items(&items);
            AwkFacts {
                effects: walk.effects,
                not_understood: walk.unknown,
            }
        }
        Err(why) => AwkFacts {
            effects: Vec::new(),
            not_understood: Some(why),
        },
    }
}

#[cfg(test)]
mod tests;
