//! A small BM25 inverted index over a standard's units, serialised with the standard. Terms are
//! lower-cased alphanumeric runs with a light plural folding and without the commonest English
//! words. Invariant: scores depend only on the index and the query, so a search is repeatable.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

const K1: f64 = 1.2;
const B: f64 = 0.75;

/// Words that say nothing about what a clause is about.
const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "is", "it", "of", "on",
    "or", "that", "the", "this", "to", "was", "were", "what", "which", "with", "does", "do", "how",
];

/// The terms of `text`, in order.
pub fn terms(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .map(fold)
        .collect()
}

/// "doors" and "door" are one term; "glass", "class" and "is" are left alone.
fn fold(w: String) -> String {
    if w.chars().count() > 3 && w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") {
        let mut w = w;
        w.pop();
        if w.ends_with("ie") {
            w.truncate(w.len() - 2);
            w.push('y');
        }
        return w;
    }
    w
}

/// Postings (unit index, term frequency) by term, and each unit's length in terms.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Bm25Index {
    postings: BTreeMap<String, Vec<(u32, u32)>>,
    lengths: Vec<u32>,
}

impl Bm25Index {
    pub fn build<'a>(documents: impl IntoIterator<Item = &'a str>) -> Self {
        let mut index = Bm25Index::default();
        for (i, doc) in documents.into_iter().enumerate() {
            let i = u32::try_from(i).unwrap_or(u32::MAX);
            let mut tf: HashMap<String, u32> = HashMap::new();
            let ts = terms(doc);
            index
                .lengths
                .push(u32::try_from(ts.len()).unwrap_or(u32::MAX));
            for t in ts {
                *tf.entry(t).or_insert(0) += 1;
            }
            for (t, n) in tf {
                index.postings.entry(t).or_default().push((i, n));
            }
        }
        for p in index.postings.values_mut() {
            p.sort_unstable();
        }
        index
    }

    pub fn documents(&self) -> usize {
        self.lengths.len()
    }

    /// The best `limit` documents for `query`, best first (ties by document order).
    pub fn search(&self, query: &str, limit: usize) -> Vec<(usize, f64)> {
        let n = self.lengths.len() as f64;
        if n == 0.0 {
            return Vec::new();
        }
        let avg = self.lengths.iter().map(|&l| f64::from(l)).sum::<f64>() / n;
        let avg = if avg > 0.0 { avg } else { 1.0 };
        let mut q = terms(query);
        q.sort();
        q.dedup();
        let mut scores: HashMap<usize, f64> = HashMap::new();
        for t in &q {
            let Some(postings) = self.postings.get(t) else {
                continue;
            };
            let df = postings.len() as f64;
            let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
            for &(doc, tf) in postings {
                let len = f64::from(self.lengths.get(doc as usize).copied().unwrap_or(0));
                let tf = f64::from(tf);
                let s = idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / avg));
                *scores.entry(doc as usize).or_insert(0.0) += s;
            }
        }
        let mut ranked: Vec<(usize, f64)> = scores.into_iter().collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked.truncate(limit);
        ranked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_fold_plurals_and_drop_stopwords() {
        assert_eq!(
            terms("The Doors of the glass class; Batteries!"),
            ["door", "glass", "class", "battery"]
        );
    }

    #[test]
    fn the_document_about_the_query_ranks_first_and_absent_terms_score_nothing() {
        let docs = [
            "General provisions apply to every building.",
            "Fire doors shall close automatically. A fire door is tested yearly.",
            "Windows in escape routes shall open without a key.",
        ];
        let index = Bm25Index::build(docs);
        let hits = index.search("fire door closing", 10);
        assert_eq!(hits[0].0, 1);
        assert_eq!(hits.len(), 1);
        assert!(index.search("submarine", 10).is_empty());
        let round: Bm25Index =
            serde_json::from_str(&serde_json::to_string(&index).unwrap()).unwrap();
        assert_eq!(round, index);
        assert_eq!(round.search("escape windows", 1)[0].0, 2);
    }
}
