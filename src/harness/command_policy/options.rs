//! Command-line option parsing as GNU getopt and find(1) do it, so rules can ask "is `-f` given?"
//! the way the program itself would answer: inside clusters (`-fn5`), with attached or separate
//! values, and with long-option abbreviations (`--fo` is `--follow` to getopt_long).

use crate::harness::shell::Word;

/// One option occurrence: its name as written (`-f`, `--follow`) and its value if it took one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Opt {
    pub name: String,
    pub value: Option<String>,
}

/// Arguments split into options and operands.
#[derive(Debug, Clone, Default)]
pub(crate) struct Parsed<'a> {
    pub options: Vec<Opt>,
    pub operands: Vec<&'a Word>,
    /// Where option parsing stopped (after `--`, or at the first operand when options come
    /// first): no word from here on is read as an option.
    pub options_end: Option<usize>,
}

/// How a program reads its options.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OptionSyntax<'s> {
    /// Options that take a value (`-n`, `--lines`).
    pub with_value: &'s [&'s str],
    /// Short options whose value, if any, must be attached (`sed -i.bak`).
    pub optional_attached: &'s [&'s str],
    /// Options are single-dash words matched whole (find's predicates).
    pub single_dash: bool,
    /// Options end at the first operand, as bash's builtins and POSIX getopt read them.
    pub options_first: bool,
}

impl<'s> OptionSyntax<'s> {
    pub fn gnu(with_value: &'s [&'s str]) -> Self {
        OptionSyntax {
            with_value,
            optional_attached: &[],
            single_dash: false,
            options_first: false,
        }
    }

    /// The same syntax with options ending at the first operand (`ssh HOST -x` runs `-x`).
    pub fn options_first(self) -> Self {
        OptionSyntax {
            options_first: true,
            ..self
        }
    }
}

impl<'a> Parsed<'a> {
    pub fn has(&self, name: &str) -> bool {
        self.options.iter().any(|o| option_matches(&o.name, name))
    }

    pub fn value_of(&self, name: &str) -> Option<&str> {
        self.options
            .iter()
            .find(|o| option_matches(&o.name, name))
            .and_then(|o| o.value.as_deref())
    }

    pub fn values_of<'b>(&'b self, name: &'b str) -> impl Iterator<Item = &'b str> + 'b {
        self.options
            .iter()
            .filter(move |o| option_matches(&o.name, name))
            .filter_map(|o| o.value.as_deref())
    }
}

/// Does an option as written (`given`) select the option `wanted`? Long options match by
/// abbreviation as getopt_long allows; single-dash words (find) match whole, or by prefix when
/// `wanted` ends in `*`.
pub(crate) fn option_matches(given: &str, wanted: &str) -> bool {
    if let Some(prefix) = wanted.strip_suffix('*') {
        return given.starts_with(prefix);
    }
    match (given.strip_prefix("--"), wanted.strip_prefix("--")) {
        (Some(g), Some(w)) => !g.is_empty() && w.starts_with(g),
        (None, None) => given == wanted,
        _ => false,
    }
}

fn takes_value(syntax: &OptionSyntax, name: &str) -> bool {
    syntax.with_value.iter().any(|w| {
        if name.starts_with("--") {
            // Exact for values: an abbreviation of a value-taking long option still takes one.
            option_matches(name, w)
        } else {
            name == *w
        }
    })
}

/// Split `args` into options and operands. `--` ends options (GNU syntax only).
pub(crate) fn parse<'a>(args: &'a [Word], syntax: OptionSyntax) -> Parsed<'a> {
    let mut out = Parsed::default();
    let mut i = 0;
    let mut options_done = false;
    while i < args.len() {
        let w = &args[i];
        let v = w.value.as_str();
        i += 1;
        if options_done || !v.starts_with('-') || v == "-" {
            out.operands.push(w);
            if !options_done && syntax.options_first {
                options_done = true;
                // The first operand itself stood where an option could.
                out.options_end = Some(i);
            }
            continue;
        }
        // The next word, consumed as an option's value.
        let next_word = |i: &mut usize| {
            let value = args.get(*i).map(|w| w.value.clone());
            *i += usize::from(value.is_some());
            value
        };
        if syntax.single_dash {
            let name = v.to_string();
            let value = takes_value(&syntax, &name)
                .then(|| next_word(&mut i))
                .flatten();
            out.options.push(Opt { name, value });
            continue;
        }
        if v == "--" {
            options_done = true;
            out.options_end = Some(i);
            continue;
        }
        if let Some(long) = v.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((n, val)) => (format!("--{n}"), Some(val.to_string())),
                None => (v.to_string(), None),
            };
            let value = match attached {
                Some(v) => Some(v),
                // An optional argument is attached (`--color=auto`), never the next word.
                None if syntax.optional_attached.contains(&name.as_str()) => None,
                None if takes_value(&syntax, &name) => next_word(&mut i),
                None => None,
            };
            out.options.push(Opt { name, value });
            continue;
        }
        // A cluster of short options: `-abc`, `-n5`, `-fn 5`.
        let chars: Vec<char> = v[1..].chars().collect();
        let mut k = 0;
        while k < chars.len() {
            let name = format!("-{}", chars[k]);
            k += 1;
            if syntax.optional_attached.contains(&name.as_str()) {
                let rest: String = chars[k..].iter().collect();
                out.options.push(Opt {
                    name,
                    value: (!rest.is_empty()).then_some(rest),
                });
                break;
            }
            if takes_value(&syntax, &name) {
                let rest: String = chars[k..].iter().collect();
                let value = if rest.is_empty() {
                    next_word(&mut i)
                } else {
                    Some(rest)
                };
                out.options.push(Opt { name, value });
                break;
            }
            out.options.push(Opt { name, value: None });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<Word> {
        s.split_whitespace().map(Word::literal).collect()
    }

    #[test]
    fn clusters_values_and_abbreviations() {
        let a = words("-fn5 --fo=name file -- -x");
        let p = parse(&a, OptionSyntax::gnu(&["-n", "--lines"]));
        assert!(p.has("-f"));
        assert_eq!(p.value_of("-n"), Some("5"));
        assert!(p.has("--follow"));
        assert_eq!(
            p.operands
                .iter()
                .map(|w| w.value.as_str())
                .collect::<Vec<_>>(),
            ["file", "-x"]
        );
        let a = words("-n 5 x");
        let p = parse(&a, OptionSyntax::gnu(&["-n"]));
        assert_eq!(p.value_of("-n"), Some("5"));
        assert_eq!(p.operands.len(), 1);
    }

    #[test]
    fn find_style_predicates_match_by_prefix() {
        let a = words(". -name x -execdir rm {} ;");
        let p = parse(
            &a,
            OptionSyntax {
                with_value: &["-name"],
                optional_attached: &[],
                single_dash: true,
                options_first: false,
            },
        );
        assert!(p.has("-exec*"));
        assert!(!p.has("-delete"));
    }

    #[test]
    fn an_optional_argument_is_attached_never_the_next_word() {
        let syntax = OptionSyntax {
            with_value: &["-d"],
            optional_attached: &["-I", "--iso-8601"],
            single_dash: false,
            options_first: false,
        };
        let a = words("-I --set=x --iso-8601 -d now -Iseconds");
        let p = parse(&a, syntax);
        let names: Vec<&str> = p.options.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["-I", "--set", "--iso-8601", "-d", "-I"]);
        assert_eq!(p.options[0].value, None);
        assert_eq!(p.options[2].value, None);
        assert_eq!(p.value_of("-d"), Some("now"));
        assert_eq!(p.options[4].value.as_deref(), Some("seconds"));
    }

    #[test]
    fn options_first_ends_options_at_the_first_operand() {
        let a = words("-n fmt -v x");
        let p = parse(&a, OptionSyntax::gnu(&[]).options_first());
        assert!(p.has("-n") && !p.has("-v"));
        assert_eq!(p.operands.len(), 3);
        // The first operand stood where an option could; the words after it cannot.
        assert_eq!(p.options_end, Some(2));
        let a = words("-a -- -b");
        assert_eq!(parse(&a, OptionSyntax::gnu(&[])).options_end, Some(2));
    }

    #[test]
    fn optional_attached_values_stay_in_the_cluster() {
        let a = words("-ni.bak s/a/b/ f");
        let p = parse(
            &a,
            OptionSyntax {
                with_value: &["-e"],
                optional_attached: &["-i"],
                single_dash: false,
                options_first: false,
            },
        );
        assert!(p.has("-n") && p.has("-i"));
        assert_eq!(p.value_of("-i"), Some(".bak"));
        assert_eq!(p.operands.len(), 2);
    }
}
