//! The awk syntax tree, kept only as fine as judging needs: which operator combines two
//! operands never decides a side effect, so operators are one node; calls, string constants,
//! `getline`, assignments and output redirections, which do, are nodes of their own.

use super::lexer::Lit;

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expr {
    /// A number, a regular expression or anything else that only yields a value.
    Leaf,
    Str(Lit),
    Var(String),
    /// `name[subscripts]` (gawk's `a[i][j]` flattened).
    Index(String, Vec<Expr>),
    Field(Box<Expr>),
    /// Any operator, or a parenthesised list: its operands.
    Ops(Vec<Expr>),
    /// `=`, `+=`, `++`, `--` …: the place written and the value (a `Leaf` for `++`).
    Assign(Box<Expr>, Box<Expr>),
    Call {
        name: String,
        args: Vec<Expr>,
        kind: CallKind,
    },
    Getline {
        var: Option<Box<Expr>>,
        from: Source,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallKind {
    Builtin,
    User,
    /// gawk's `@name(…)`: the function is the one `name` holds at run time.
    Indirect,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Source {
    /// The current input.
    Input,
    /// `getline < file`.
    File(Box<Expr>),
    /// `cmd | getline` (`coprocess`: `cmd |& getline`).
    Command { cmd: Box<Expr>, coprocess: bool },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Redirect {
    /// `>` or `>>`.
    File,
    /// `|`.
    Pipe,
    /// gawk's `|&`.
    Coprocess,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Stmt {
    Print {
        args: Vec<Expr>,
        to: Option<(Redirect, Expr)>,
    },
    Expr(Expr),
    /// Any compound statement (`if`, `while`, `for`, `switch`, a block): its expressions and
    /// the statements it holds.
    Compound(Vec<Expr>, Vec<Stmt>),
    /// `for (var in array)`: the loop variable is written.
    ForIn(Expr, String, Box<Stmt>),
    /// `next`, `break`, `;` …
    Nothing,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Item {
    /// `pattern`, `p1, p2`, `BEGIN` …, with their action.
    Rule(Vec<Expr>, Vec<Stmt>),
    Function(String, Vec<Stmt>),
    /// `@load "x"` or `@include "x"`.
    Directive(String, Lit),
}
