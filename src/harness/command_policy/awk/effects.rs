//! What a parsed awk program can do besides reading its input and printing: read off the
//! syntax tree node by node, never searched for in the text.

use super::ast::{CallKind, Expr, Item, Redirect, Source, Stmt};
use super::lexer::Lit;

/// One side effect some awk gives the program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Effect {
    /// Runs a command: `how` it is handed over, and its text when that is a constant.
    Runs {
        how: &'static str,
        command: Option<String>,
    },
    /// Writes (`>`, `>>`) the file with this constant name.
    Writes(String),
    /// Writes a file whose name is made at run time.
    WritesAtRunTime,
    /// Reads (`getline <`) a file whose name is made at run time: gawk opens `/inet/…` names
    /// as network connections.
    ReadsAtRunTime,
    /// Changes `ARGV`, so the input files are named at run time.
    ChangesArgv,
    /// `@load` or `@include`: code Spear does not see.
    Loads(String),
    /// gawk's `@name(…)`: calls whatever function `name` holds, `system` included.
    IndirectCall(String),
    /// Names a gawk network special file (`/inet/tcp/…`); `opened` when used as a file.
    Network { name: String, opened: bool },
}

/// A name gawk opens as a network connection (`/inet/`, `/inet4/`, `/inet6/`; `/p/` for the
/// old portal files).
pub(crate) fn network_name(name: &str) -> bool {
    name.starts_with("/inet") || name.starts_with("/p/")
}

/// Built-ins that assign to an argument (`split(s, a)`, `sub(r, s, t)`), and those that only
/// ask about an array, which therefore may be handed `ARGV`.
const ASSIGNING_BUILTINS: &[&str] = &["split", "patsplit", "sub", "gsub", "asort", "asorti"];
const ARRAY_QUERIES: &[&str] = &["length", "isarray", "typeof"];

pub(crate) struct Walk<'d> {
    pub defined: &'d [String],
    pub effects: Vec<Effect>,
    /// The first construct that could not be judged.
    pub unknown: Option<String>,
}

fn is_argv(e: &Expr) -> bool {
    matches!(e, Expr::Var(n) | Expr::Index(n, _) if n == "ARGV")
}

/// The text of a constant whose escapes mean the same to every awk.
fn constant(e: &Expr) -> Option<&Lit> {
    match e {
        Expr::Str(l) if l.plain => Some(l),
        _ => None,
    }
}

impl Walk<'_> {
    fn add(&mut self, e: Effect) {
        if !self.effects.contains(&e) {
            self.effects.push(e);
        }
    }

    fn unknown(&mut self, why: String) {
        self.unknown.get_or_insert(why);
    }

    pub fn items(&mut self, items: &[Item]) {
        for item in items {
            match item {
                Item::Rule(patterns, body) => {
                    patterns.iter().for_each(|p| self.expr(p));
                    self.stmts(body);
                }
                Item::Function(_, body) => self.stmts(body),
                Item::Directive(kind, name) => {
                    self.add(Effect::Loads(format!("@{kind} \"{}\"", name.value)));
                }
            }
        }
    }

    fn stmts(&mut self, stmts: &[Stmt]) {
        stmts.iter().for_each(|s| self.stmt(s));
    }

    fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::Print { args, to } => {
                args.iter().for_each(|a| self.expr(a));
                if let Some((kind, target)) = to {
                    self.output(*kind, target);
                }
            }
            Stmt::Expr(e) => self.expr(e),
            Stmt::Compound(exprs, body) => {
                exprs.iter().for_each(|e| self.expr(e));
                self.stmts(body);
            }
            Stmt::ForIn(var, _, body) => {
                if is_argv(var) {
                    self.add(Effect::ChangesArgv);
                }
                self.stmt(body);
            }
            Stmt::Nothing => {}
        }
    }

    fn output(&mut self, kind: Redirect, target: &Expr) {
        let literal = constant(target).map(|l| l.value.clone());
        match (kind, literal) {
            (Redirect::File | Redirect::Coprocess, Some(name)) if network_name(&name) => {
                self.add(Effect::Network { name, opened: true });
            }
            (Redirect::File, Some(name)) => self.add(Effect::Writes(name)),
            (Redirect::File, None) => self.add(Effect::WritesAtRunTime),
            (Redirect::Pipe, command) => self.add(Effect::Runs {
                how: "`print | command`",
                command,
            }),
            (Redirect::Coprocess, command) => self.add(Effect::Runs {
                how: "a `|&` coprocess",
                command,
            }),
        }
        self.expr(target);
    }

    fn expr(&mut self, e: &Expr) {
        match e {
            Expr::Leaf => {}
            Expr::Str(l) => {
                if network_name(&l.value) {
                    self.add(Effect::Network {
                        name: l.value.clone(),
                        opened: false,
                    });
                }
            }
            Expr::Var(n) | Expr::Index(n, _) if n == "SYMTAB" || n == "awk::SYMTAB" => {
                self.unknown(
                    "gawk's `SYMTAB`, which reaches variables by names made at run time".into(),
                );
            }
            Expr::Var(_) => {}
            Expr::Index(_, subs) | Expr::Ops(subs) => subs.iter().for_each(|s| self.expr(s)),
            Expr::Field(e) => self.expr(e),
            Expr::Assign(target, value) => {
                if is_argv(target) {
                    self.add(Effect::ChangesArgv);
                }
                self.expr(target);
                self.expr(value);
            }
            Expr::Call { name, args, kind } => self.call(name, args, *kind),
            Expr::Getline { var, from } => {
                if let Some(v) = var {
                    if is_argv(v) {
                        self.add(Effect::ChangesArgv);
                    }
                    self.expr(v);
                }
                self.getline(from);
            }
        }
    }

    fn call(&mut self, name: &str, args: &[Expr], kind: CallKind) {
        match kind {
            CallKind::Indirect => self.add(Effect::IndirectCall(name.to_string())),
            CallKind::Builtin if name == "system" => self.add(Effect::Runs {
                how: "`system`",
                command: args.first().and_then(constant).map(|l| l.value.clone()),
            }),
            CallKind::Builtin => {}
            CallKind::User => {
                let bare = name.strip_prefix("awk::").unwrap_or(name);
                if !self.defined.iter().any(|d| d == name || d == bare) {
                    self.unknown(format!(
                        "a call of `{name}`, a function the program does not define"
                    ));
                }
            }
        }
        // Arrays are passed by reference: a function handed `ARGV` may change it.
        let changes = match kind {
            CallKind::Builtin if ASSIGNING_BUILTINS.contains(&name) => args.iter().any(is_argv),
            CallKind::Builtin if ARRAY_QUERIES.contains(&name) => false,
            _ => args
                .iter()
                .any(|a| matches!(a, Expr::Var(n) if n == "ARGV")),
        };
        if changes {
            self.add(Effect::ChangesArgv);
        }
        args.iter().for_each(|a| self.expr(a));
    }

    fn getline(&mut self, from: &Source) {
        match from {
            Source::Input => {}
            Source::File(file) => {
                match constant(file).map(|l| l.value.clone()) {
                    Some(name) if network_name(&name) => {
                        self.add(Effect::Network { name, opened: true });
                    }
                    Some(_) => {}
                    None => self.add(Effect::ReadsAtRunTime),
                }
                self.expr(file);
            }
            Source::Command { cmd, coprocess } => {
                let literal = constant(cmd).map(|l| l.value.clone());
                match literal {
                    Some(name) if *coprocess && network_name(&name) => {
                        self.add(Effect::Network { name, opened: true });
                    }
                    command => self.add(Effect::Runs {
                        how: if *coprocess {
                            "a `|&` coprocess"
                        } else {
                            "`command | getline`"
                        },
                        command,
                    }),
                }
                self.expr(cmd);
            }
        }
    }
}
