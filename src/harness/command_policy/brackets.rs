//! Bracket expressions in regular expressions (`[/]`, `[]a]`, `[^]a]`, `[[:alpha:]]`), read
//! the strict way: what dialects read differently (`\]`, a nested `[`, a newline) is refused,
//! so a program that depends on it is not understood. Shared by the awk and sed readers, where
//! a delimiter inside a bracket does not end the regex.

/// A bracket expression from just after its `[`: the index after its `]`.
pub(crate) fn bracket(s: &[char], mut i: usize) -> Result<usize, String> {
    if s.get(i) == Some(&'^') {
        i += 1;
    }
    // A `]` first is a member, not the end.
    if s.get(i) == Some(&']') {
        i += 1;
    }
    while i < s.len() {
        match s[i] {
            '\n' => break,
            ']' => return Ok(i + 1),
            '\\' => {
                // `\]` ends the bracket for POSIX and not for gawk: refused.
                if matches!(s.get(i + 1), Some(']' | '\n') | None) {
                    return Err("a `\\]` inside a bracket expression".into());
                }
                i += 2;
            }
            '[' => match s.get(i + 1) {
                Some(&k @ (':' | '.' | '=')) => {
                    let mut j = i + 2;
                    while j + 1 < s.len() && !(s[j] == k && s[j + 1] == ']') {
                        if s[j] == '\n' {
                            return Err("an unterminated character class".into());
                        }
                        j += 1;
                    }
                    if j + 1 >= s.len() {
                        return Err("an unterminated character class".into());
                    }
                    i = j + 2;
                }
                // gawk counts nested `[`; others do not.
                _ => return Err("a `[` inside a bracket expression".into()),
            },
            _ => i += 1,
        }
    }
    Err("a bracket expression without its closing `]`".into())
}
