//! awk expressions, by precedence from assignment down to primaries. `no_gt` is set inside a
//! `print` list outside parentheses, where `>` is a redirection and not a comparison, as every
//! awk reads `print a > "f"`; parentheses, subscripts and call arguments clear it again.

use super::ast::{CallKind, Expr, Source};
use super::lexer::{BUILTINS, KEYWORDS, Tok};
use super::parser::Parser;

const ASSIGNMENTS: &[&str] = &["=", "+=", "-=", "*=", "/=", "%=", "^=", "**="];
const COMPARISONS: &[&str] = &["<", "<=", "!=", "==", ">=", ">"];

fn lvalue(e: &Expr) -> bool {
    matches!(e, Expr::Var(_) | Expr::Index(..) | Expr::Field(_))
}

fn ops(parts: Vec<Expr>) -> Expr {
    Expr::Ops(parts)
}

/// One operand alone, or the operands of a chain of operators as one flat node: a chain of a
/// million `+` is then one node, not a tree a million deep.
fn flat(mut parts: Vec<Expr>) -> Expr {
    if parts.len() == 1 {
        parts.remove(0)
    } else {
        Expr::Ops(parts)
    }
}

impl Parser {
    pub(super) fn expr(&mut self, no_gt: bool) -> Result<Expr, String> {
        self.enter()?;
        let e = self.ternary(no_gt);
        self.leave();
        e
    }

    /// Expressions separated by `,` (newlines allowed after each comma).
    pub(super) fn expr_list(&mut self, no_gt: bool) -> Result<Vec<Expr>, String> {
        let mut list = vec![self.expr(no_gt)?];
        while self.eat(",") {
            self.newlines();
            list.push(self.expr(no_gt)?);
        }
        Ok(list)
    }

    fn ternary(&mut self, no_gt: bool) -> Result<Expr, String> {
        let cond = self.or(no_gt)?;
        if let Some(Tok::Punct(p)) = self.peek()
            && ASSIGNMENTS.contains(p)
            && lvalue(&cond)
        {
            self.bump();
            let value = self.expr(no_gt)?;
            return Ok(Expr::Assign(Box::new(cond), Box::new(value)));
        }
        if self.eat("?") {
            self.newlines();
            let a = self.expr(no_gt)?;
            self.newlines();
            self.expect(":")?;
            self.newlines();
            let b = self.expr(no_gt)?;
            return Ok(ops(vec![cond, a, b]));
        }
        Ok(cond)
    }

    /// A left-to-right chain of the binary operators `ops` over operands read by `next`, as
    /// one flat node. `||` and `&&` may be followed by newlines.
    fn chain(
        &mut self,
        no_gt: bool,
        ops: &[&str],
        next: fn(&mut Self, bool) -> Result<Expr, String>,
    ) -> Result<Expr, String> {
        let mut parts = vec![next(self, no_gt)?];
        while let Some(op) = ops.iter().find(|op| self.is(op)) {
            self.bump();
            if *op == "||" || *op == "&&" {
                self.newlines();
            }
            parts.push(next(self, no_gt)?);
        }
        Ok(flat(parts))
    }

    fn or(&mut self, no_gt: bool) -> Result<Expr, String> {
        self.chain(no_gt, &["||"], Self::and)
    }

    fn and(&mut self, no_gt: bool) -> Result<Expr, String> {
        self.chain(no_gt, &["&&"], Self::membership)
    }

    fn membership(&mut self, no_gt: bool) -> Result<Expr, String> {
        let mut parts = vec![self.matching(no_gt)?];
        while self.is_word("in") {
            self.bump();
            parts.push(Expr::Var(self.variable_name()?));
        }
        Ok(flat(parts))
    }

    fn matching(&mut self, no_gt: bool) -> Result<Expr, String> {
        self.chain(no_gt, &["~", "!~"], Self::comparison)
    }

    fn comparison(&mut self, no_gt: bool) -> Result<Expr, String> {
        let mut parts = vec![self.piped_getline(no_gt)?];
        while let Some(Tok::Punct(p)) = self.peek()
            && COMPARISONS.contains(p)
            && !(no_gt && *p == ">")
        {
            self.bump();
            parts.push(self.piped_getline(no_gt)?);
        }
        Ok(flat(parts))
    }

    /// `cmd | getline [var]` and gawk's `cmd |& getline [var]`.
    fn piped_getline(&mut self, no_gt: bool) -> Result<Expr, String> {
        let mut l = self.concatenation(no_gt)?;
        // Each pipe nests the command before it one level deeper.
        for _ in 0..8 {
            let coprocess = self.is("|&");
            let getline =
                matches!(self.peek_at(1), Some(Tok::Name { text, .. }) if text == "getline");
            if !(self.is("|") || coprocess) || !getline {
                return Ok(l);
            }
            self.bump();
            self.bump();
            let var = self.getline_var()?;
            l = Expr::Getline {
                var,
                from: Source::Command {
                    cmd: Box::new(l),
                    coprocess,
                },
            };
        }
        Err("`| getline` chained more than 8 times".into())
    }

    /// Operands side by side are concatenated; one that could also be a binary operator's
    /// right side (`-`, `+`) never starts a concatenated operand.
    pub(super) fn concatenation(&mut self, no_gt: bool) -> Result<Expr, String> {
        let mut parts = vec![self.additive(no_gt)?];
        while self.starts_operand() {
            parts.push(self.additive(no_gt)?);
        }
        Ok(flat(parts))
    }

    fn starts_operand(&self) -> bool {
        match self.peek() {
            Some(Tok::Name { text, .. }) => !KEYWORDS.contains(&text.as_str()) || text == "getline",
            Some(Tok::Number | Tok::Str(_) | Tok::Regex | Tok::TypedRegex | Tok::At(_)) => true,
            Some(Tok::Punct(p)) => ["$", "(", "!", "++", "--"].contains(p),
            _ => false,
        }
    }

    fn additive(&mut self, no_gt: bool) -> Result<Expr, String> {
        self.chain(no_gt, &["+", "-"], Self::multiplicative)
    }

    fn multiplicative(&mut self, no_gt: bool) -> Result<Expr, String> {
        self.chain(no_gt, &["*", "/", "%"], Self::unary)
    }

    fn unary(&mut self, no_gt: bool) -> Result<Expr, String> {
        if self.eat("!") || self.eat("-") || self.eat("+") {
            self.enter()?;
            let e = self.unary(no_gt);
            self.leave();
            return Ok(ops(vec![e?]));
        }
        let base = self.postfix()?;
        if self.eat("^") || self.eat("**") {
            // Right-associative, and the exponent may be negative: `2^-1`, `2^3^2`.
            self.enter()?;
            let e = self.unary(no_gt);
            self.leave();
            return Ok(ops(vec![base, e?]));
        }
        Ok(base)
    }

    fn postfix(&mut self) -> Result<Expr, String> {
        let e = self.primary()?;
        if lvalue(&e) && (self.is("++") || self.is("--")) {
            self.bump();
            return Ok(Expr::Assign(Box::new(e), Box::new(Expr::Leaf)));
        }
        Ok(e)
    }

    fn primary(&mut self) -> Result<Expr, String> {
        self.enter()?;
        let e = self.primary_inner();
        self.leave();
        e
    }

    fn primary_inner(&mut self) -> Result<Expr, String> {
        let Some(tok) = self.peek().cloned() else {
            return Err(self.unexpected("an expression"));
        };
        match tok {
            Tok::Number | Tok::Regex | Tok::TypedRegex => {
                self.bump();
                Ok(Expr::Leaf)
            }
            Tok::Str(lit) => {
                self.bump();
                Ok(Expr::Str(lit))
            }
            Tok::Punct("(") => {
                self.bump();
                let mut list = self.expr_list(false)?;
                self.expect(")")?;
                Ok(if list.len() == 1 {
                    list.remove(0)
                } else {
                    ops(list)
                })
            }
            Tok::Punct("$") => {
                self.bump();
                Ok(Expr::Field(Box::new(self.field_operand()?)))
            }
            Tok::Punct(p @ ("++" | "--")) => {
                self.bump();
                let target = self.primary()?;
                if !lvalue(&target) {
                    return Err(format!("`{p}` before something that is not a variable"));
                }
                Ok(Expr::Assign(Box::new(target), Box::new(Expr::Leaf)))
            }
            Tok::Punct("-" | "+" | "!") => {
                // Only reached as a field's operand (`$-1`) or after `++`.
                self.bump();
                Ok(ops(vec![self.primary()?]))
            }
            Tok::At(name) => {
                self.bump();
                if !self.is("(") {
                    return Err(format!("`@{name}` where an expression was expected"));
                }
                let args = self.call_args()?;
                Ok(Expr::Call {
                    name,
                    args,
                    kind: CallKind::Indirect,
                })
            }
            Tok::Name { text, call } => {
                self.bump();
                self.name_expr(text, call)
            }
            _ => Err(self.unexpected("an expression")),
        }
    }

    /// What follows `$`: a primary, or `++`/`--`/`-` before one.
    fn field_operand(&mut self) -> Result<Expr, String> {
        self.primary()
    }

    fn name_expr(&mut self, text: String, call: bool) -> Result<Expr, String> {
        if text == "getline" {
            let var = self.getline_var()?;
            let from = if self.eat("<") {
                // gawk reads `getline < "a" "b"` as reading the file `ab`; taking the whole
                // concatenation as the name can only make a literal name less literal.
                Source::File(Box::new(self.concatenation(true)?))
            } else {
                Source::Input
            };
            return Ok(Expr::Getline { var, from });
        }
        if KEYWORDS.contains(&text.as_str()) {
            return Err(format!("`{text}` where an expression was expected"));
        }
        if BUILTINS.contains(&text.as_str()) {
            if self.is("(") {
                let args = self.call_args()?;
                return Ok(Expr::Call {
                    name: text,
                    args,
                    kind: CallKind::Builtin,
                });
            }
            if text == "length" {
                return Ok(Expr::Call {
                    name: text,
                    args: Vec::new(),
                    kind: CallKind::Builtin,
                });
            }
            return Err(format!("`{text}` without its arguments"));
        }
        if call {
            let args = self.call_args()?;
            return Ok(Expr::Call {
                name: text,
                args,
                kind: CallKind::User,
            });
        }
        if self.is("[") {
            let mut subs = Vec::new();
            while self.eat("[") {
                subs.extend(self.expr_list(false)?);
                self.expect("]")?;
            }
            return Ok(Expr::Index(text, subs));
        }
        Ok(Expr::Var(text))
    }

    /// `( args )`, possibly empty.
    fn call_args(&mut self) -> Result<Vec<Expr>, String> {
        self.expect("(")?;
        self.newlines();
        if self.eat(")") {
            return Ok(Vec::new());
        }
        let args = self.expr_list(false)?;
        self.newlines();
        self.expect(")")?;
        Ok(args)
    }

    /// The variable `getline` may read into: a name, an element or a field.
    fn getline_var(&mut self) -> Result<Option<Box<Expr>>, String> {
        match self.peek() {
            Some(Tok::Punct("$")) => {
                self.bump();
                Ok(Some(Box::new(Expr::Field(Box::new(self.primary()?)))))
            }
            Some(Tok::Name { text, call: false })
                if !KEYWORDS.contains(&text.as_str()) && !BUILTINS.contains(&text.as_str()) =>
            {
                let text = text.clone();
                self.bump();
                let e = self.name_expr(text, false)?;
                Ok(Some(Box::new(e)))
            }
            _ => Ok(None),
        }
    }
}
