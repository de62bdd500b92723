//! `ResultWriter`: streams one output into the ResultStore within its cap, as it arrives. The
//! first half of the cap takes the output's head; after that the output goes to tail segments
//! (eight to the other half), and when a new segment would pass the cap the oldest is deleted,
//! so disk and memory stay bounded however long the flood runs. At the end the kept segments are
//! appended after the head, behind a marker line that says how much of the middle was dropped.
//! Only the head and tail of the preview and a sparse line index stay in memory.

use std::collections::VecDeque;
use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use crate::tools::executor::{OutputSink, OutputStream};
use crate::tools::results::error::{StoreError, io_err};
use crate::tools::results::index::{LINE_STRIDE, ResultIndex};
use crate::tools::results::preview::{Facts, PreviewBuffer, StoreReport, StoredOutput};

/// Disk is asked of the store at least this much at a time (each request lists the store).
const GRANT_STEP: u64 = 1 << 20;
/// Tail segments: the tail half of the cap is cut into this many.
const SEGMENTS: u64 = 8;
/// A kept tail starts at a line start when one begins within this many bytes.
const ALIGN_WITHIN: usize = 64 * 1024;

/// What a writer needs of the store it writes into, and nothing more: disk granted as the output
/// grows, the store's private files, and an end to its reservation. `ResultStore` implements
/// it; the writer knows nothing else of the store (so the store may create writers without the
/// two modules naming each other).
pub(crate) trait Budget: Send + Sync {
    /// The per-result cap and the total budget the store keeps to.
    fn per_result_bytes(&self) -> u64;
    fn total_bytes(&self) -> u64;
    /// Let the writer `id` use `want` more bytes: the bytes granted, the results evicted and
    /// their bytes.
    fn grow(&self, id: &str, want: u64) -> Result<(u64, u64, u64), StoreError>;
    /// The writer `id` is done: its reservation ends.
    fn release(&self, id: &str);
    /// A new file of the store, private to the user.
    fn create_file(&self, path: &Path) -> Result<File, StoreError>;
    /// Forget the result `id`.
    fn discard(&self, id: &str) -> Result<(), StoreError>;
}

/// One tail segment file.
struct Segment {
    path: PathBuf,
    len: u64,
    newlines: u64,
}

/// Streams one output to disk within its cap, keeping only its preview head and tail and a
/// sparse line index in memory.
pub struct ResultWriter {
    store: Box<dyn Budget>,
    id: String,
    path: PathBuf,
    out: BufWriter<File>,
    /// The head half of the cap, and the size of one tail segment.
    head_cap: u64,
    seg_size: u64,
    cap: u64,
    segments: VecDeque<Segment>,
    current: Option<BufWriter<File>>,
    seg_seq: u64,
    /// Bytes of this result on disk now, and the bytes the store granted it.
    on_disk: u64,
    granted: u64,
    /// Output bytes deleted with old tail segments, or refused room.
    dropped: u64,
    report: StoreReport,
    // The output as produced.
    total: u64,
    newlines: u64,
    last: u8,
    // The stored text.
    stored: u64,
    stored_newlines: u64,
    stored_last: u8,
    starts: Vec<u64>,
    preview: PreviewBuffer,
    error: Option<io::Error>,
    finished: bool,
    kept: bool,
}

impl ResultWriter {
    pub(crate) fn new(
        store: Box<dyn Budget>,
        id: String,
        path: PathBuf,
        file: File,
        cap: u64,
    ) -> Self {
        // Another process evicting must see that this result is being written.
        let _ = file.lock_shared();
        let head_cap = cap / 2;
        let (per_result, total) = (store.per_result_bytes(), store.total_bytes());
        ResultWriter {
            store,
            id,
            path,
            out: BufWriter::with_capacity(256 * 1024, file),
            head_cap,
            seg_size: (cap - head_cap) / SEGMENTS,
            cap,
            segments: VecDeque::new(),
            current: None,
            seg_seq: 0,
            on_disk: 0,
            granted: 0,
            dropped: 0,
            report: StoreReport {
                cap_bytes: cap,
                per_result_cap_bytes: per_result,
                total_budget_bytes: total,
                ..StoreReport::default()
            },
            total: 0,
            newlines: 0,
            last: b'\n',
            stored: 0,
            stored_newlines: 0,
            stored_last: b'\n',
            starts: vec![0],
            preview: PreviewBuffer::new(),
            error: None,
            finished: false,
            kept: true,
        }
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// Make room for `n` more bytes on disk; false when the store could not give it.
    fn room(&mut self, n: u64) -> Result<bool, StoreError> {
        if self.on_disk + n <= self.granted {
            return Ok(true);
        }
        let want = (self.on_disk + n - self.granted).max(GRANT_STEP);
        let (grant, evicted, bytes) = self.store.grow(&self.id, want)?;
        self.granted += grant;
        self.report.evicted_results += evicted;
        self.report.evicted_bytes += bytes;
        Ok(self.on_disk + n <= self.granted)
    }

    /// Write `bytes` to the stored text, indexing its lines.
    fn store_text(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        for pos in memchr::memchr_iter(b'\n', bytes) {
            self.stored_newlines += 1;
            if self.stored_newlines.is_multiple_of(LINE_STRIDE) {
                self.starts.push(self.stored + pos as u64 + 1);
            }
        }
        self.stored += bytes.len() as u64;
        self.on_disk += bytes.len() as u64;
        if let Some(&b) = bytes.last() {
            self.stored_last = b;
        }
        Ok(())
    }

    /// Keep `chunk` within the cap: the head first, then the rotating tail segments.
    fn keep(&mut self, mut chunk: &[u8]) -> Result<(), StoreError> {
        if self.stored < self.head_cap {
            let take = chunk.len().min((self.head_cap - self.stored) as usize);
            if !self.room(take as u64)? {
                self.dropped += chunk.len() as u64;
                return Ok(());
            }
            self.store_text(&chunk[..take])
                .map_err(io_err("write", &self.path))?;
            chunk = &chunk[take..];
        }
        while !chunk.is_empty() {
            if self.seg_size == 0 {
                self.dropped += chunk.len() as u64;
                return Ok(());
            }
            if self.current.is_none()
                || self.segments.back().is_some_and(|s| s.len >= self.seg_size)
            {
                self.next_segment()?;
            }
            let Some(seg) = self.segments.back_mut() else {
                return Ok(());
            };
            let take = chunk.len().min((self.seg_size - seg.len) as usize);
            if !self.room(take as u64)? {
                self.dropped += chunk.len() as u64;
                return Ok(());
            }
            let (Some(cur), Some(seg)) = (self.current.as_mut(), self.segments.back_mut()) else {
                return Ok(());
            };
            cur.write_all(&chunk[..take])
                .map_err(io_err("write", &seg.path))?;
            seg.len += take as u64;
            seg.newlines += memchr::memchr_iter(b'\n', &chunk[..take]).count() as u64;
            self.on_disk += take as u64;
            chunk = &chunk[take..];
        }
        Ok(())
    }

    /// Close the current segment and open the next; delete the oldest when the segments would
    /// pass the tail half of the cap (one segment is kept free for the copy at the end).
    fn next_segment(&mut self) -> Result<(), StoreError> {
        if let Some(mut cur) = self.current.take() {
            cur.flush().map_err(io_err("write", &self.path))?;
        }
        if self.segments.len() as u64 >= SEGMENTS - 1
            && let Some(old) = self.segments.pop_front()
        {
            fs::remove_file(&old.path).map_err(io_err("remove", &old.path))?;
            self.on_disk -= old.len;
            self.dropped += old.len;
        }
        self.seg_seq += 1;
        let path = self.path.with_extension(format!("t{}", self.seg_seq));
        let file = self.store.create_file(&path)?;
        self.current = Some(BufWriter::with_capacity(256 * 1024, file));
        self.segments.push_back(Segment {
            path,
            len: 0,
            newlines: 0,
        });
        Ok(())
    }

    /// Take one chunk. I/O errors are remembered and reported by `finish`; counting goes on, so
    /// the envelope still says how large the output was.
    pub fn push(&mut self, chunk: &[u8]) {
        if chunk.is_empty() {
            return;
        }
        self.newlines += memchr::memchr_iter(b'\n', chunk).count() as u64;
        if self.error.is_none()
            && let Err(e) = self.keep(chunk)
        {
            self.error = Some(io::Error::other(e.to_string()));
        }
        self.preview.push(chunk);
        self.total += chunk.len() as u64;
        self.last = chunk[chunk.len() - 1];
    }

    /// Append the kept tail segments after the head (behind a marker when the middle was
    /// dropped), deleting each once copied.
    fn join_tail(&mut self) -> Result<(), StoreError> {
        if let Some(mut cur) = self.current.take() {
            cur.flush().map_err(io_err("write", &self.path))?;
        }
        let head_kept = self.stored;
        let mut skip = 0u64;
        if self.dropped > 0
            && let Some(first) = self.segments.front()
        {
            // Start the kept tail at a line start, when one is near.
            let mut buf = vec![0u8; ALIGN_WITHIN.min(first.len as usize)];
            let mut f = File::open(&first.path).map_err(io_err("open", &first.path))?;
            f.read_exact(&mut buf)
                .map_err(io_err("read", &first.path))?;
            if let Some(nl) = memchr::memchr(b'\n', &buf).filter(|&nl| (nl as u64) + 1 < first.len)
            {
                skip = nl as u64 + 1;
            }
            self.dropped += skip;
            let kept_tail: u64 = self.segments.iter().map(|s| s.len).sum::<u64>() - skip;
            // The skipped part ends at the first newline of the kept segments.
            let tail_newlines =
                self.segments.iter().map(|s| s.newlines).sum::<u64>() - u64::from(skip > 0);
            let dropped_lines = self
                .newlines
                .saturating_sub(self.stored_newlines + tail_newlines);
            let lead = if self.stored_last == b'\n' { "" } else { "\n" };
            let marker = format!(
                "{lead}[… {} bytes ({dropped_lines} lines) of the output were not kept here: it \
                 was larger than the {} bytes one stored result may keep; above are its first \
                 {head_kept} bytes, below its last {kept_tail} …]\n",
                self.dropped, self.cap
            );
            if self.room(marker.len() as u64)? {
                self.store_text(marker.as_bytes())
                    .map_err(io_err("write", &self.path))?;
            }
            self.report.kept_tail_bytes = kept_tail;
        }
        self.report.kept_head_bytes = head_kept;
        let mut copied = 0u64;
        while let Some(seg) = self.segments.pop_front() {
            let mut f = File::open(&seg.path).map_err(io_err("open", &seg.path))?;
            let mut buf = vec![0u8; 256 * 1024];
            let mut first = std::mem::take(&mut skip);
            loop {
                let n = f.read(&mut buf).map_err(io_err("read", &seg.path))?;
                if n == 0 {
                    break;
                }
                let from = (first as usize).min(n);
                first -= from as u64;
                // The segment is already counted on disk; its copy needs room until it is gone.
                if !self.room((n - from) as u64)? {
                    break;
                }
                self.store_text(&buf[from..n])
                    .map_err(io_err("write", &self.path))?;
                copied += (n - from) as u64;
            }
            fs::remove_file(&seg.path).map_err(io_err("remove", &seg.path))?;
            self.on_disk -= seg.len;
        }
        if self.dropped == 0 {
            // Nothing was dropped: the stored text is the whole output.
            self.report.kept_head_bytes = self.stored;
        } else {
            // What was really copied (less than planned only if the store was filled by
            // another process meanwhile).
            self.report.kept_tail_bytes = copied;
            self.report.dropped_bytes = self.total - head_kept - copied;
        }
        Ok(())
    }

    /// Flush, write the index, and build the preview.
    pub fn finish(mut self) -> Result<StoredOutput, StoreError> {
        let result = self.finish_inner();
        if result.is_ok() {
            self.finished = true;
            self.store.release(&self.id);
        }
        result
    }

    fn finish_inner(&mut self) -> Result<StoredOutput, StoreError> {
        if let Some(e) = self.error.take() {
            return Err(io_err("write", &self.path)(e));
        }
        self.join_tail()?;
        self.out.flush().map_err(io_err("write", &self.path))?;
        let total_lines = self.newlines + u64::from(self.total > 0 && self.last != b'\n');
        let index = ResultIndex {
            total_bytes: self.total,
            total_lines,
            stored_bytes: self.stored,
            stored_lines: self.stored_newlines + u64::from(self.stored_last != b'\n'),
            dropped_bytes: self.report.dropped_bytes,
            head_bytes: self.report.kept_head_bytes,
            tail_bytes: self.report.kept_tail_bytes,
            starts: std::mem::take(&mut self.starts),
        };
        let idx_path = self.path.with_extension("idx");
        let encoded = serde_json::to_vec(&index).map_err(|e| StoreError::Io {
            op: "encode",
            path: idx_path.clone(),
            source: io::Error::other(e),
        })?;
        // The reservation covers the index (see `with_index`); without room for it (this turn's
        // results fill the budget) nothing is kept, and the preview says so.
        if self.room(encoded.len() as u64)? {
            fs::write(&idx_path, &encoded).map_err(io_err("write", &idx_path))?;
        } else {
            self.store.discard(&self.id)?;
            self.kept = false;
            self.report.kept_head_bytes = 0;
            self.report.kept_tail_bytes = 0;
            self.report.dropped_bytes = self.total;
        }
        let facts = Facts {
            id: &self.id,
            total: self.total,
            cap: self.cap,
            kept: self.kept,
            report: self.report,
        };
        Ok(self.preview.build(&facts, &index))
    }
}

impl Drop for ResultWriter {
    /// A writer abandoned before `finish` (or whose `finish` failed) leaves no files behind and
    /// no reservation.
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        self.current = None;
        // Best effort: an id half written is unreachable anyway, and the next eviction counts it.
        let _ = self.store.discard(&self.id);
        self.store.release(&self.id);
    }
}

impl OutputSink for ResultWriter {
    fn write(&mut self, _stream: OutputStream, chunk: &[u8]) -> io::Result<()> {
        // Both streams go to one file in arrival order, as a terminal would show them.
        self.push(chunk);
        match &self.error {
            Some(e) => Err(io::Error::new(e.kind(), e.to_string())),
            None => Ok(()),
        }
    }
}
