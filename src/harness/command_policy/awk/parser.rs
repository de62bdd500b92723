//! The awk parser, program items and statements (expressions are in `expr.rs`): a recursive
//! descent over the union of the POSIX, gawk, mawk and busybox grammars. It accepts a program
//! only when it reads all of it; anything else is an error naming what it could not read.
//! Accepting a little more than some awk does is safe (that awk refuses to run the program);
//! reading a token differently from any awk is not, so the lexer refuses where they differ.

use super::ast::{Expr, Item, Stmt};
use super::lexer::{BUILTINS, KEYWORDS, Tok, lex};

/// How deep statements and expressions may nest before the program is refused, so that no
/// input can exhaust the stack.
const MAX_DEPTH: usize = 64;

pub(crate) struct Parser {
    toks: Vec<Tok>,
    pos: usize,
    depth: usize,
    /// Functions the program defines, with and without their namespace.
    pub defined: Vec<String>,
    namespace: Option<String>,
}

/// Parse a whole program: its items and the functions it defines.
pub(crate) fn parse(src: &str) -> Result<(Vec<Item>, Vec<String>), String> {
    let mut p = Parser {
        toks: lex(src)?,
        pos: 0,
        depth: 0,
        defined: Vec::new(),
        namespace: None,
    };
    let items = p.program()?;
    Ok((items, p.defined))
}

/// A token as the error messages show it.
fn shown(t: Option<&Tok>) -> String {
    match t {
        None => "the end of the program".into(),
        Some(Tok::Newline) => "a newline".into(),
        Some(Tok::Name { text, .. }) => format!("`{text}`"),
        Some(Tok::Number) => "a number".into(),
        Some(Tok::Str(_)) => "a string".into(),
        Some(Tok::Regex | Tok::TypedRegex) => "a regular expression".into(),
        Some(Tok::At(n)) => format!("`@{n}`"),
        Some(Tok::Punct(p)) => format!("`{p}`"),
    }
}

impl Parser {
    pub(super) fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    pub(super) fn peek_at(&self, k: usize) -> Option<&Tok> {
        self.toks.get(self.pos + k)
    }

    pub(super) fn bump(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += usize::from(t.is_some());
        t
    }

    pub(super) fn is(&self, p: &str) -> bool {
        matches!(self.peek(), Some(Tok::Punct(q)) if *q == p)
    }

    pub(super) fn eat(&mut self, p: &str) -> bool {
        let yes = self.is(p);
        self.pos += usize::from(yes);
        yes
    }

    pub(super) fn expect(&mut self, p: &str) -> Result<(), String> {
        if self.eat(p) {
            Ok(())
        } else {
            Err(self.unexpected(&format!("`{p}`")))
        }
    }

    pub(super) fn is_word(&self, w: &str) -> bool {
        matches!(self.peek(), Some(Tok::Name { text, .. }) if text == w)
    }

    pub(super) fn unexpected(&self, wanted: &str) -> String {
        format!("{} where {wanted} was expected", shown(self.peek()))
    }

    /// Newlines are allowed after `{`, `,`, `&&`, `||`, `do`, `else` and a few more places.
    pub(super) fn newlines(&mut self) {
        while matches!(self.peek(), Some(Tok::Newline)) {
            self.pos += 1;
        }
    }

    fn separators(&mut self) {
        while matches!(self.peek(), Some(Tok::Newline)) || self.is(";") {
            self.pos += 1;
        }
    }

    /// Count one level of nesting, refusing past [`MAX_DEPTH`].
    pub(super) fn enter(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(format!("nesting deeper than {MAX_DEPTH} levels"));
        }
        Ok(())
    }

    pub(super) fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// A name that can be a variable or array: not a keyword, not a built-in.
    pub(super) fn variable_name(&mut self) -> Result<String, String> {
        match self.peek() {
            Some(Tok::Name { text, .. })
                if !KEYWORDS.contains(&text.as_str()) && !BUILTINS.contains(&text.as_str()) =>
            {
                let text = text.clone();
                self.pos += 1;
                Ok(text)
            }
            _ => Err(self.unexpected("a variable name")),
        }
    }

    fn program(&mut self) -> Result<Vec<Item>, String> {
        let mut items = Vec::new();
        loop {
            self.separators();
            if self.peek().is_none() {
                return Ok(items);
            }
            let item = self.item()?;
            let ends_in_block = matches!(
                &item,
                Item::Function(..) | Item::Rule(_, _) if self.pos > 0
                    && self.toks.get(self.pos - 1) == Some(&Tok::Punct("}"))
            );
            items.push(item);
            // Items are separated by newlines or `;`; after an action's `}` the next may follow.
            let separated = matches!(self.peek(), None | Some(Tok::Newline)) || self.is(";");
            if !separated && !ends_in_block {
                return Err(self.unexpected("a newline or `;`"));
            }
        }
    }

    fn item(&mut self) -> Result<Item, String> {
        match self.peek().cloned() {
            Some(Tok::Name { text, .. }) if text == "function" || text == "func" => {
                self.pos += 1;
                self.function()
            }
            Some(Tok::Name { text, .. })
                if ["BEGIN", "END", "BEGINFILE", "ENDFILE"].contains(&text.as_str()) =>
            {
                self.pos += 1;
                Ok(Item::Rule(Vec::new(), self.block()?))
            }
            Some(Tok::At(kind)) if kind == "load" || kind == "include" || kind == "namespace" => {
                self.pos += 1;
                let Some(Tok::Str(name)) = self.bump() else {
                    return Err(format!("`@{kind}` without a string"));
                };
                if kind == "namespace" {
                    self.namespace = Some(name.value);
                    return Ok(Item::Rule(Vec::new(), Vec::new()));
                }
                Ok(Item::Directive(kind, name))
            }
            Some(Tok::Punct("{")) => Ok(Item::Rule(Vec::new(), self.block()?)),
            _ => {
                let mut patterns = vec![self.expr(false)?];
                if self.eat(",") {
                    self.newlines();
                    patterns.push(self.expr(false)?);
                }
                let action = if self.is("{") {
                    self.block()?
                } else {
                    Vec::new()
                };
                Ok(Item::Rule(patterns, action))
            }
        }
    }

    fn function(&mut self) -> Result<Item, String> {
        let name = self.variable_name()?;
        self.defined.push(name.clone());
        if let Some(ns) = &self.namespace
            && !name.contains("::")
        {
            self.defined.push(format!("{ns}::{name}"));
        }
        self.expect("(")?;
        let mut first = true;
        while !self.eat(")") {
            if !first {
                self.expect(",")?;
                self.newlines();
            }
            first = false;
            self.variable_name()?;
        }
        self.newlines();
        Ok(Item::Function(name, self.block()?))
    }

    pub(super) fn block(&mut self) -> Result<Vec<Stmt>, String> {
        self.expect("{")?;
        let mut body = Vec::new();
        loop {
            self.separators();
            if self.eat("}") {
                return Ok(body);
            }
            if self.peek().is_none() {
                return Err("a `{` without its `}`".into());
            }
            body.push(self.stmt()?);
        }
    }

    fn stmt(&mut self) -> Result<Stmt, String> {
        self.enter()?;
        let s = self.stmt_inner();
        self.leave();
        s
    }

    /// A statement that may be empty (`while (x);`).
    fn body(&mut self) -> Result<Stmt, String> {
        self.newlines();
        if self.eat(";") {
            return Ok(Stmt::Nothing);
        }
        self.stmt()
    }

    fn condition(&mut self) -> Result<Expr, String> {
        self.expect("(")?;
        let e = self.expr(false)?;
        self.expect(")")?;
        Ok(e)
    }

    fn stmt_inner(&mut self) -> Result<Stmt, String> {
        let word = match self.peek() {
            Some(Tok::Punct("{")) => return Ok(Stmt::Compound(Vec::new(), self.block()?)),
            Some(Tok::Punct(";")) => {
                self.pos += 1;
                return Ok(Stmt::Nothing);
            }
            Some(Tok::Name { text, .. }) => text.clone(),
            _ => String::new(),
        };
        let s = match word.as_str() {
            "if" => {
                self.pos += 1;
                let cond = self.condition()?;
                let mut then = vec![self.body()?];
                let save = self.pos;
                self.newlines();
                if self.is_word("else") {
                    self.pos += 1;
                    then.push(self.body()?);
                } else {
                    self.pos = save;
                }
                return Ok(Stmt::Compound(vec![cond], then));
            }
            "while" => {
                self.pos += 1;
                let cond = self.condition()?;
                return Ok(Stmt::Compound(vec![cond], vec![self.body()?]));
            }
            "do" => {
                self.pos += 1;
                let body = self.body()?;
                self.newlines();
                if !self.is_word("while") {
                    return Err(self.unexpected("the `while` of a `do`"));
                }
                self.pos += 1;
                Stmt::Compound(vec![self.condition()?], vec![body])
            }
            "for" => {
                self.pos += 1;
                return self.for_stmt();
            }
            "switch" => {
                self.pos += 1;
                return self.switch();
            }
            "break" | "continue" | "next" | "nextfile" => {
                self.pos += 1;
                Stmt::Nothing
            }
            "exit" | "return" => {
                self.pos += 1;
                if self.at_end() {
                    Stmt::Nothing
                } else {
                    Stmt::Expr(self.expr(false)?)
                }
            }
            "delete" => {
                self.pos += 1;
                let name = self.variable_name()?;
                let mut subs = Vec::new();
                while self.eat("[") {
                    subs.extend(self.expr_list(false)?);
                    self.expect("]")?;
                }
                Stmt::Expr(Expr::Index(name, subs))
            }
            "print" | "printf" => {
                self.pos += 1;
                self.print()?
            }
            _ => Stmt::Expr(self.expr(false)?),
        };
        self.terminator()?;
        Ok(s)
    }

    /// Where a simple statement may end: `;`, a newline, a `}` or the end.
    fn at_end(&self) -> bool {
        matches!(self.peek(), None | Some(Tok::Newline)) || self.is(";") || self.is("}")
    }

    fn terminator(&mut self) -> Result<(), String> {
        if matches!(self.peek(), Some(Tok::Newline)) || self.is(";") {
            self.pos += 1;
            Ok(())
        } else if self.peek().is_none() || self.is("}") {
            Ok(())
        } else {
            Err(self.unexpected("the end of a statement"))
        }
    }

    fn for_stmt(&mut self) -> Result<Stmt, String> {
        self.expect("(")?;
        if let (Some(Tok::Name { text: var, .. }), Some(Tok::Name { text: kw, .. })) =
            (self.peek_at(0), self.peek_at(1))
            && kw == "in"
            && matches!(self.peek_at(3), Some(Tok::Punct(")")))
        {
            let var = var.clone();
            if KEYWORDS.contains(&var.as_str()) || BUILTINS.contains(&var.as_str()) {
                return Err(self.unexpected("a variable name"));
            }
            self.pos += 2;
            let array = self.variable_name()?;
            self.expect(")")?;
            let body = self.body()?;
            return Ok(Stmt::ForIn(Expr::Var(var), array, Box::new(body)));
        }
        let mut exprs = Vec::new();
        for (i, end) in [";", ";", ")"].into_iter().enumerate() {
            if i > 0 {
                self.newlines();
            }
            if !self.is(end) {
                exprs.push(self.expr(false)?);
            }
            self.expect(end)?;
        }
        Ok(Stmt::Compound(exprs, vec![self.body()?]))
    }

    /// gawk's `switch (e) { case c: … default: … }`; a case is a constant.
    fn switch(&mut self) -> Result<Stmt, String> {
        let subject = self.condition()?;
        self.newlines();
        self.expect("{")?;
        let mut body = Vec::new();
        loop {
            self.separators();
            if self.eat("}") {
                return Ok(Stmt::Compound(vec![subject], body));
            }
            if self.is_word("case") {
                self.pos += 1;
                if !self.eat("-") {
                    self.eat("+");
                }
                match self.bump() {
                    Some(Tok::Number | Tok::Str(_) | Tok::Regex | Tok::TypedRegex) => {}
                    _ => return Err("a `case` without a constant".into()),
                }
                self.expect(":")?;
            } else if self.is_word("default") {
                self.pos += 1;
                self.expect(":")?;
            } else if self.peek().is_none() {
                return Err("a `switch` without its `}`".into());
            } else {
                body.push(self.stmt()?);
            }
        }
    }

    fn print(&mut self) -> Result<Stmt, String> {
        let redirect = |p: &Parser| ["|", "|&", ">", ">>"].into_iter().find(|r| p.is(r));
        let args = if self.at_end() || redirect(self).is_some() {
            Vec::new()
        } else {
            self.expr_list(true)?
        };
        let to = match redirect(self) {
            Some(r) => {
                self.pos += 1;
                let kind = match r {
                    "|" => super::ast::Redirect::Pipe,
                    "|&" => super::ast::Redirect::Coprocess,
                    _ => super::ast::Redirect::File,
                };
                Some((kind, self.concatenation(true)?))
            }
            None => None,
        };
        Ok(Stmt::Print { args, to })
    }
}
