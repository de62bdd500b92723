//! Print the tree-sitter-bash syntax tree of each argument: the tool for seeing how the grammar
//! reads a command before writing a classifier rule for it. `cargo run --example tsdump -- 'ls | wc'`

fn walk(n: tree_sitter::Node, src: &[u8], depth: usize) {
    let text: String = n.utf8_text(src).unwrap_or("?").chars().take(40).collect();
    let quote = if n.is_named() { "" } else { "'" };
    println!("{}{quote}{} {text:?}", "  ".repeat(depth), n.kind());
    let mut cursor = n.walk();
    for (i, child) in n.children(&mut cursor).enumerate() {
        if let Some(field) = u32::try_from(i)
            .ok()
            .and_then(|i| n.field_name_for_child(i))
        {
            println!("{}[{field}]", "  ".repeat(depth + 1));
        }
        walk(child, src, depth + 1);
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut parser = tree_sitter::Parser::new();
    parser.set_language(&tree_sitter_bash::LANGUAGE.into())?;
    for source in std::env::args().skip(1) {
        let tree = parser
            .parse(&source, None)
            .ok_or("the parser gave no tree")?;
        walk(tree.root_node(), source.as_bytes(), 0);
    }
    Ok(())
}
