//! Commands built from the corpus's pieces by a small grammar: the allow-listed tools with
//! options from their own positive lists, operands that name the seed's files (globs, names
//! that begin with `-`, quoted names), expansions, redirections, wrappers, list operators,
//! and the corpus's own commands composed and wrapped. Seeded, so a run can be repeated; the
//! oracle keeps only what the classifier calls READ_ONLY.

use spear::harness::command_policy::allowlist::{Entry, allow_list};

/// xorshift64*: small, deterministic, good enough to pick grammar rules.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15 | 1)
    }

    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const OPERANDS: &[&str] = &[
    "a.txt",
    "b.txt",
    "*.txt",
    "*.md",
    "*.rs",
    "src/*.rs",
    "src",
    "src/main.rs",
    "docs",
    ".",
    "..",
    "README.md",
    "data.json",
    "data.csv",
    "app.log",
    "*.log",
    "main.py",
    "Cargo.toml",
    "link.txt",
    "etc-link",
    "bin.dat",
    "empty.txt",
    "missing.txt",
    ".gitignore",
    ".git/config",
    ".git/HEAD",
    "'notes with space.md'",
    "\"notes with space.md\"",
    "./-n",
    "./-rf",
    "-- -n",
    "-- --help",
    "*",
    ".*",
    "{a,b}.txt",
    "[ab].txt",
    "?.txt",
    "\"$HOME\"",
    "~",
    "$PWD",
    "\"$(echo a.txt)\"",
    "`echo b.txt`",
    "/etc/hostname",
    "/etc/os-release",
    "/dev/null",
    "-",
    "$'a.txt'",
    "\"${HOME}\"/x",
    "**/*.rs",
    "\"${f:-a.txt}\"",
    "\"$(ls | head -1)\"",
    "$(printf %s -n)",
    "<(cat a.txt)",
    ".git",
    ".git/hooks",
    "./script.sh",
    "/proc/self/status",
    "/dev/stdin",
    "$((1+1))",
    "\"$@\"",
    "${x[0]}",
    "'-'",
    "--",
];

const VALUES: &[&str] = &[
    "1", "2", "5", "0", "10", "+2", "a.txt", "x", "TODO", "auto", "never", "always", ":", ",",
    "'%s'", "'%n %s'", "name", "json", "HEAD", "main", "v1", "-1", "1k", "utf-8", "short",
    "oneline", "'*.rs'", "src",
];

const REDIRECTIONS: &[&str] = &[
    " 2>/dev/null",
    " 2>&1",
    " >/dev/null",
    " </dev/null",
    " <a.txt",
    " >&2",
    " 2>&-",
    " <<< 'alpha'",
    " 1>&2",
    " 3>&1",
    " >/dev/stdout",
    " 2>/dev/stderr",
    " &>/dev/null",
    " <&-",
    " >|/dev/null",
    " 2>>/dev/null",
    " <>a.txt",
    " 3<>a.txt",
    " 3<a.txt",
    " >/dev/fd/1",
    " >/proc/self/fd/2",
    " 2>/dev/fd/1",
    " >&-",
    " <<'EOF'\nalpha\nEOF\n",
    " <<EOF\n$HOME\nEOF\n",
    " 1<>/dev/null",
    " >/dev/full",
    " >/dev/zero",
];

const WRAPPERS: &[&str] = &[
    "env ",
    "command ",
    "nice ",
    "timeout 5 ",
    "time ",
    "LC_ALL=C ",
    "env LC_ALL=C ",
    "nohup ",
    "builtin ",
    "exec ",
    "TZ=UTC ",
    "env -u HOME ",
    "command -p ",
    "timeout -s KILL 3 ",
    "nice -n 5 ",
    "PAGER=cat ",
    "GIT_PAGER=cat ",
    "xargs ",
    "printf '%s\\n' a.txt | xargs ",
    "find . -name '*.txt' -print0 | xargs -0 ",
];

/// `find` running a generated command for each file (`X`): read-only exactly when `X` with
/// any further path is (issue 22, item 7).
const FIND_EXEC: &[&str] = &[
    "find . -name '*.txt' -exec X {} +",
    "find . -type f -exec X {} \\;",
    "find src docs -execdir X {} +",
    "find . -maxdepth 1 -exec X {} \\;",
    "find . -name '*.md' -exec X {} \\; -print",
];

const OPERATORS: &[&str] = &[" && ", " || ", "; ", " | ", "\n", " |& "];

const STRUCTURES: &[&str] = &[
    "( X )",
    "{ X; }",
    "echo \"$(X)\"",
    "echo $(X)",
    "if X; then echo y; fi",
    "for f in *.txt; do X; done",
    "while false; do X; done",
    "! X",
    "cat <(X)",
    "case a in a) X;; esac",
    "X | head -3",
    "X | wc -l",
    "X | sort | uniq -c",
    "X | grep -c a",
    "X | xargs echo",
    "[ -f a.txt ] && X",
    "test -d src || X",
    "x=a.txt; X",
    "f() { X; }; f",
    "X | tee /dev/null",
    "X > >(cat)",
    "(cd src && X)",
    "cd docs; X",
    "until true; do X; done",
    "select x in a; do X; break; done </dev/null",
    "exec 3<a.txt; X",
    "exec 2>/dev/null; X",
    "{ X; } 2>&1 | cat",
    "time { X; }",
    "coproc X",
    "X &",
    "X; wait",
];

/// Program texts for the tools that run one (sed, awk): readers, and the writers, runners and
/// readers of other files the classifier must catch.
const SED_SCRIPTS: &[&str] = &[
    "-n 1p",
    "'1,2p'",
    "-e p",
    "-n '/a/p'",
    "'s/a/b/'",
    "'s/a/b/g'",
    "'/x/d'",
    "'y/ab/ba/'",
    "=",
    "'s/a/b/w out.txt'",
    "'w out.txt'",
    "'1e id'",
    "'s/x/y/e'",
    "'r a.txt'",
    "'R b.txt'",
    "'W out.txt'",
    "-n 'l'",
    "'$!N;P;D'",
    "-z 's/a/b/'",
    "-E 's/(a)/\\1/'",
    "--debug p",
    "-s -n '$p'",
    "-u p",
    "'F'",
    "'Q'",
];

const AWK_PROGRAMS: &[&str] = &[
    "'{print $1}'",
    "'NR==1'",
    "-F, '{print $2}'",
    "'END{print NR}'",
    "'{print > \"out.txt\"}'",
    "'BEGIN{system(\"id\")}'",
    "'{print | \"cat\"}'",
    "'BEGIN{while((getline l < \"a.txt\")>0) print l}'",
    "'BEGIN{\"date\" | getline d; print d}'",
    "'{printf \"%s\\n\", $0}'",
    "-v OFS=: '{$1=$1; print}'",
    "'BEGIN{print ENVIRON[\"HOME\"]}'",
    "'{print > \"/dev/stderr\"}'",
    "'BEGIN{close(\"x\"); fflush()}'",
    "'{a[$1]++} END{for(k in a) print k, a[k]}'",
    "'@load \"readfile\"'",
    "-f main.py",
    "'BEGIN { printf \"x\" > \"/dev/null\" }'",
];

/// The pieces the generator draws from.
pub struct Grammar {
    entries: Vec<&'static Entry>,
    corpus: Vec<String>,
}

impl Grammar {
    /// `corpus`: the READ_ONLY commands of the corpus (and the everyday list), composable ones.
    pub fn new(corpus: Vec<String>) -> Grammar {
        let list = allow_list().expect("the allow-list parses");
        Grammar {
            entries: list.commands.iter().collect(),
            corpus,
        }
    }

    /// One command line.
    pub fn line(&self, r: &mut Rng) -> String {
        let mut s = self.pipeline(r);
        let joins = match r.below(10) {
            0..=5 => 0,
            6..=8 => 1,
            _ => 2,
        };
        for _ in 0..joins {
            s.push_str(r.pick::<&str>(OPERATORS));
            s.push_str(&self.pipeline(r));
        }
        if r.chance(15) {
            let st = *r.pick(STRUCTURES);
            s = st.replace('X', &s);
        }
        s
    }

    fn pipeline(&self, r: &mut Rng) -> String {
        let mut s = match r.below(10) {
            0..=2 if !self.corpus.is_empty() => r.pick(&self.corpus).clone(),
            _ => self.simple(r),
        };
        if r.chance(8) {
            s = r.pick::<&str>(FIND_EXEC).replace('X', &self.simple(r));
        }
        if r.chance(25) {
            s = format!("{}{s}", r.pick(WRAPPERS));
        }
        for _ in 0..r.below(3) {
            if r.chance(40) {
                s.push_str(r.pick::<&str>(REDIRECTIONS));
            }
        }
        s
    }

    /// One allow-listed program with options from its own lists and operands from the seed.
    fn simple(&self, r: &mut Rng) -> String {
        let e = *r.pick(&self.entries);
        if r.chance(20) && !e.ok.is_empty() {
            // An example of the entry, with something more.
            let mut s = r.pick(&e.ok).clone();
            if r.chance(50) {
                s.push(' ');
                s.push_str(&self.option(e, r));
            }
            return s;
        }
        let mut words = vec![r.pick(&e.names).clone()];
        if let Some(subs) = &e.subcommands {
            let keys: Vec<&String> = subs.keys().collect();
            let key = *r.pick(&keys);
            if r.chance(20) && !e.global_flags.is_empty() {
                words.push(r.pick(&e.global_flags).clone());
            }
            words.push(key.clone());
            let sub = &subs[key];
            for _ in 0..r.below(3) {
                words.push(self.option(sub, r));
            }
            for _ in 0..r.below(3) {
                words.push(self.operand(r));
            }
            return words.join(" ");
        }
        for _ in 0..r.below(4) {
            words.push(self.option(e, r));
        }
        match e.check.as_deref() {
            Some("sed") => words.push(r.pick(SED_SCRIPTS).to_string()),
            Some("awk") => words.push(r.pick(AWK_PROGRAMS).to_string()),
            _ => {}
        }
        for _ in 0..r.below(4) {
            words.push(self.operand(r));
        }
        words.join(" ")
    }

    fn option(&self, e: &Entry, r: &mut Rng) -> String {
        let mut kinds = Vec::new();
        if !e.short_flags.is_empty() {
            kinds.push(0);
        }
        if !e.flags.is_empty() {
            kinds.push(1);
        }
        if !e.with_value.is_empty() {
            kinds.push(2);
        }
        if !e.optional_attached.is_empty() {
            kinds.push(3);
        }
        if kinds.is_empty() {
            return self.operand(r);
        }
        match *r.pick(&kinds) {
            0 => {
                let chars: Vec<char> = e.short_flags.chars().collect();
                let n = 1 + r.below(3);
                let s: String = (0..n).map(|_| *r.pick(&chars)).collect();
                format!("-{s}")
            }
            1 => r.pick(&e.flags).clone(),
            2 => {
                let o = r.pick(&e.with_value);
                let v = r.pick(VALUES);
                match (o.starts_with("--"), r.chance(50)) {
                    (true, true) => format!("{o}={v}"),
                    (false, true) => format!("{o}{v}"),
                    _ => format!("{o} {v}"),
                }
            }
            _ => {
                let o = r.pick(&e.optional_attached);
                match r.chance(50) {
                    true => o.clone(),
                    false => format!("{o}={}", r.pick(VALUES)),
                }
            }
        }
    }

    fn operand(&self, r: &mut Rng) -> String {
        r.pick(OPERANDS).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_commands() {
        let g = Grammar::new(vec!["ls".into(), "cat a.txt".into()]);
        let a: Vec<String> = {
            let mut r = Rng::new(7);
            (0..50).map(|_| g.line(&mut r)).collect()
        };
        let b: Vec<String> = {
            let mut r = Rng::new(7);
            (0..50).map(|_| g.line(&mut r)).collect()
        };
        assert_eq!(a, b);
        assert!(a.iter().collect::<std::collections::HashSet<_>>().len() > 40);
    }
}
