//! A minimal PDF 1.4 writer for tests: pages of text lines in the standard Helvetica font, or
//! pages that are only an image (what a scan looks like to an extractor), with a correct
//! cross-reference table so strict and lenient readers alike accept the file.

#![allow(dead_code)] // each test binary uses the part it needs

/// What one page holds.
pub enum Page {
    /// Lines of text, top to bottom.
    Text(Vec<String>),
    /// A grey image covering the page and no text at all.
    Image,
}

/// A PDF whose pages are `pages`.
pub fn build(pages: &[Page]) -> Vec<u8> {
    // Objects: 1 catalog, 2 page tree, 3 font, 4 image, then per page its page and its content.
    let n = pages.len();
    let mut objects: Vec<Vec<u8>> = Vec::new();
    objects.push(b"<< /Type /Catalog /Pages 2 0 R >>".to_vec());
    let kids: Vec<String> = (0..n).map(|i| format!("{} 0 R", 5 + 2 * i)).collect();
    objects.push(format!("<< /Type /Pages /Kids [{}] /Count {n} >>", kids.join(" ")).into_bytes());
    objects.push(
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
            .to_vec(),
    );
    let pixels = vec![0x80u8; 16 * 16];
    let mut image = format!(
        "<< /Type /XObject /Subtype /Image /Width 16 /Height 16 /ColorSpace /DeviceGray \
         /BitsPerComponent 8 /Length {} >>\nstream\n",
        pixels.len()
    )
    .into_bytes();
    image.extend_from_slice(&pixels);
    image.extend_from_slice(b"\nendstream");
    objects.push(image);
    for (i, page) in pages.iter().enumerate() {
        let content_id = 6 + 2 * i;
        objects.push(
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {content_id} 0 R \
                 /Resources << /Font << /F1 3 0 R >> /XObject << /Im1 4 0 R >> >> >>"
            )
            .into_bytes(),
        );
        let stream = match page {
            Page::Text(lines) => {
                let mut s = String::from("BT /F1 12 Tf 72 720 Td 14 TL\n");
                for line in lines {
                    s.push_str(&format!("({}) Tj T*\n", escape(line)));
                }
                s.push_str("ET");
                s
            }
            Page::Image => "q 612 0 0 792 0 0 cm /Im1 Do Q".to_string(),
        };
        objects.push(
            format!(
                "<< /Length {} >>\nstream\n{stream}\nendstream",
                stream.len()
            )
            .into_bytes(),
        );
    }
    let mut out = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n".to_vec();
    let mut offsets = Vec::with_capacity(objects.len());
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for o in offsets {
        out.extend_from_slice(format!("{o:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

/// One line of text per page.
pub fn text_pages(pages: &[&str]) -> Vec<u8> {
    let pages: Vec<Page> = pages
        .iter()
        .map(|t| Page::Text(vec![t.to_string()]))
        .collect();
    build(&pages)
}

/// `n` pages, page k saying `Page k of n marker-k`.
pub fn numbered(n: usize) -> Vec<u8> {
    let pages: Vec<Page> = (1..=n)
        .map(|k| Page::Text(vec![format!("Page {k} of {n} marker-{k}")]))
        .collect();
    build(&pages)
}

/// `n` pages of images and no text: a scan.
pub fn scanned(n: usize) -> Vec<u8> {
    let pages: Vec<Page> = (0..n).map(|_| Page::Image).collect();
    build(&pages)
}

fn escape(s: &str) -> String {
    s.replace('\\', r"\\")
        .replace('(', r"\(")
        .replace(')', r"\)")
}
