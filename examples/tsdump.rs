fn walk(n: tree_sitter::Node, src: &[u8], d: usize) {
    let field = "";
    let t = n.utf8_text(src).unwrap_or("?");
    let t: String = t.chars().take(40).collect();
    println!(
        "{}{}{} {:?}",
        "  ".repeat(d),
        if n.is_named() { "" } else { "'" },
        n.kind(),
        t
    );
    let mut c = n.walk();
    for (i, ch) in n.children(&mut c).enumerate() {
        let f = n.field_name_for_child(i as u32).unwrap_or(field);
        if !f.is_empty() {
            print!("{}[{}]", "  ".repeat(d + 1), f);
            println!();
        }
        walk(ch, src, d + 1);
    }
}
fn main() {
    let mut p = tree_sitter::Parser::new();
    p.set_language(&tree_sitter_bash::LANGUAGE.into()).unwrap();
    for a in std::env::args().skip(1) {
        let t = p.parse(&a, None).unwrap();
        walk(t.root_node(), a.as_bytes(), 0);
    }
}
