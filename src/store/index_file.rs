//! The index file: one little-endian file, written to a temporary name and renamed into place.
//!
//! ```text
//! word  0      magic  b"\x93NDUPIDX"
//! word  1      format version (1)
//! word  2      file length in bytes
//! word  3      k of the index
//! word  4      k of the plan
//! word  5      levels of the plan (1..=4)
//! words 6..10  blocks per level (unused levels 0)
//! word 10      entries n
//! word 11      distinct fingerprints m
//! word 12      next default id (two's complement)
//! word 13      tables T
//! then         fingerprints [n] u64, ids [n] i64 (both sorted by fingerprint, then id),
//!              positions in id order [n] u32 (padded to a whole word),
//!              T tables of m permuted fingerprints, each ascending
//! last word    checksum of every word before it
//! ```
//!
//! Loading checks the length, magic, version and checksum before anything else, then the
//! structure (orders, counts, the tables against the fingerprints), so a truncated, corrupted,
//! foreign or newer file is an [`Error::Format`] and never a panic.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::runtime::map_guard::Guard;
use crate::search::plan::{Plan, MAX_K, MAX_LEVELS};

pub const MAGIC: [u8; 8] = *b"\x93NDUPIDX";
pub const VERSION: u64 = 1;
const HEADER_WORDS: usize = 14;

/// The checksum: a bijective mix per word, so any change to a single word always changes it.
#[derive(Clone, Copy)]
pub struct Checksum(u64);

impl Default for Checksum {
    fn default() -> Self {
        Checksum(crate::PI_SEED)
    }
}

impl Checksum {
    #[inline]
    pub fn add(&mut self, w: u64) {
        let mut h = (self.0 ^ w).wrapping_mul(crate::GOLDEN_GAMMA);
        h ^= h >> 29;
        self.0 = h;
    }

    pub fn add_all(&mut self, words: &[u64]) {
        for &w in words {
            self.add(w);
        }
    }

    pub fn value(self) -> u64 {
        self.0
    }
}

/// Values that can be viewed in place in a little-endian file: plain old data (every bit pattern
/// valid, no padding), so bytemuck casts bytes to them.
pub trait Plain: bytemuck::Pod + Send + Sync {
    const SIZE: usize;
    fn from_le(bytes: &[u8]) -> Self;
}
impl Plain for u64 {
    const SIZE: usize = 8;
    fn from_le(b: &[u8]) -> Self {
        let mut a = [0u8; 8];
        a.copy_from_slice(&b[..8]);
        u64::from_le_bytes(a)
    }
}
impl Plain for i64 {
    const SIZE: usize = 8;
    fn from_le(b: &[u8]) -> Self {
        <u64 as Plain>::from_le(b) as i64
    }
}
impl Plain for u32 {
    const SIZE: usize = 4;
    fn from_le(b: &[u8]) -> Self {
        let mut a = [0u8; 4];
        a.copy_from_slice(&b[..4]);
        u32::from_le_bytes(a)
    }
}

/// What a mapped file was when it was loaded: its identity, size and modification time.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    modified: Option<std::time::SystemTime>,
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Self {
        #[cfg(unix)]
        let (dev, ino) = {
            use std::os::unix::fs::MetadataExt;
            (meta.dev(), meta.ino())
        };
        #[cfg(not(unix))]
        let (dev, ino) = (0, 0);
        Stamp {
            dev,
            ino,
            len: meta.len(),
            modified: meta.modified().ok(),
        }
    }
}

/// The file under a mapped index, kept open so that it can be checked on every use: a map
/// shows whatever the file holds now, so a file truncated in place would fault on access
/// (SIGBUS) and one rewritten in place would answer from other data.
pub struct Source {
    file: File,
    stamp: Stamp,
    path: PathBuf,
}

impl Source {
    /// [`Error::Changed`] if the file was truncated, extended or written since it was mapped
    /// (its size or modification time differ) or is no longer the same file.
    pub fn check(&self) -> Result<()> {
        let now = Stamp::of(&self.file.metadata()?);
        if now == self.stamp {
            return Ok(());
        }
        let what = if now.len != self.stamp.len {
            format!("its size went from {} to {} bytes", self.stamp.len, now.len)
        } else if (now.dev, now.ino) != (self.stamp.dev, self.stamp.ino) {
            "it is no longer the same file".to_owned()
        } else {
            "its modification time changed".to_owned()
        };
        Err(Error::Changed(format!(
            "{}: the memory-mapped index file changed in place since it was loaded ({what}); \
             load it again, or load it with mmap=False. Replace an index file by renaming a new \
             one over it (as save does), never by writing into it",
            self.path.display()
        )))
    }
}

/// The bytes of a loaded file: read into memory (8-byte aligned) or mapped.
pub enum Backing {
    /// Whole words holding the file's bytes, and the byte length.
    Heap(Vec<u64>, usize),
    /// The map, and the guard that turns a fault of its pages into zeros
    /// ([`crate::runtime::map_guard`]; dropped first, so unregistered before the map is unmapped).
    Map(Guard, memmap2::Mmap),
}

impl Backing {
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Backing::Heap(v, len) => {
                let bytes: &[u8] = bytemuck::cast_slice(v);
                &bytes[..(*len).min(bytes.len())]
            }
            Backing::Map(_, m) => m,
        }
    }
}

/// An array owned by the index or viewed in place in a loaded file.
pub enum Words<T: Plain> {
    Owned(Vec<T>),
    Shared {
        backing: Arc<Backing>,
        offset: usize,
        len: usize,
    },
}

impl<T: Plain> Words<T> {
    /// Whether the values are viewed in a loaded file rather than owned.
    pub fn is_shared(&self) -> bool {
        matches!(self, Words::Shared { .. })
    }
}

impl<T: Plain> Default for Words<T> {
    fn default() -> Self {
        Words::Owned(Vec::new())
    }
}

impl<T: Plain> From<Vec<T>> for Words<T> {
    fn from(v: Vec<T>) -> Self {
        Words::Owned(v)
    }
}

impl<T: Plain> Deref for Words<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match self {
            Words::Owned(v) => v,
            Words::Shared {
                backing,
                offset,
                len,
            } => {
                // `view` made this value only where the cast succeeds: the range lies inside the
                // backing and its address is aligned for T (and the host is little-endian).
                bytemuck::cast_slice(&backing.bytes()[*offset..*offset + *len * T::SIZE])
            }
        }
    }
}

/// `len` values of T at byte `offset` of the backing: in place where possible, else copied.
pub(crate) fn view<T: Plain>(
    backing: &Arc<Backing>,
    offset: usize,
    len: usize,
) -> Result<Words<T>> {
    let bytes = backing.bytes();
    let end = len
        .checked_mul(T::SIZE)
        .and_then(|n| n.checked_add(offset))
        .filter(|&end| end <= bytes.len())
        .ok_or_else(|| format_error(offset as u64, "array runs past the end of the file"))?;
    let aligned = bytemuck::try_cast_slice::<u8, T>(&bytes[offset..end]).is_ok();
    if cfg!(target_endian = "little") && aligned {
        Ok(Words::Shared {
            backing: Arc::clone(backing),
            offset,
            len,
        })
    } else {
        Ok(Words::Owned(
            bytes[offset..end]
                .chunks_exact(T::SIZE)
                .map(T::from_le)
                .collect(),
        ))
    }
}

pub(crate) fn format_error(offset: u64, reason: impl Into<String>) -> Error {
    Error::Format {
        offset,
        reason: reason.into(),
    }
}

/// Everything the file holds.
pub struct Stored {
    pub k: u32,
    pub plan: Plan,
    pub next_id: i64,
    pub fps: Words<u64>,
    pub ids: Words<i64>,
    pub by_id: Words<u32>,
    pub tables: Vec<Words<u64>>,
    /// The mapped file, to check on use; None when the file was read into memory.
    pub source: Option<Source>,
}

/// What [`save`] writes, borrowed.
pub struct ToStore<'a> {
    pub k: u32,
    pub plan: &'a Plan,
    pub next_id: i64,
    pub fps: &'a [u64],
    pub ids: &'a [i64],
    pub by_id: &'a [u32],
    pub tables: Vec<&'a [u64]>,
}

fn file_len(n: u64, m: u64, tables: u64) -> Option<u64> {
    let words = (HEADER_WORDS as u64)
        .checked_add(n.checked_mul(2)?)?
        .checked_add(n.div_ceil(2))?
        .checked_add(m.checked_mul(tables)?)?
        .checked_add(1)?;
    words.checked_mul(8)
}

struct HashingWriter<W: Write> {
    out: W,
    sum: Checksum,
}

impl<W: Write> HashingWriter<W> {
    fn words(&mut self, words: &[u64]) -> std::io::Result<()> {
        self.sum.add_all(words);
        for chunk in words.chunks(8192) {
            let mut bytes = Vec::with_capacity(chunk.len() * 8);
            for w in chunk {
                bytes.extend_from_slice(&w.to_le_bytes());
            }
            self.out.write_all(&bytes)?;
        }
        Ok(())
    }
}

/// Writes the index to `path` atomically: a temporary file in the same folder, synced, renamed.
pub fn save(path: &Path, data: &ToStore<'_>) -> Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| Error::invalid(format!("path must name a file, got {}", path.display())))?;
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let unique = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut tmp_name = name.to_os_string();
    tmp_name.push(format!(".tmp-{}-{unique}", std::process::id()));
    let tmp: PathBuf = dir.join(tmp_name);
    let result =
        write_file(&tmp, data).and_then(|()| std::fs::rename(&tmp, path).map_err(Error::from));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

fn write_file(tmp: &Path, data: &ToStore<'_>) -> Result<()> {
    let n = data.fps.len() as u64;
    let m = data.tables.first().map_or(0, |t| t.len()) as u64;
    let t = data.tables.len() as u64;
    let len = file_len(n, m, t).ok_or_else(|| Error::invalid("index too large to save"))?;
    let file = File::create(tmp)?;
    let mut w = HashingWriter {
        out: BufWriter::with_capacity(1 << 20, file),
        sum: Checksum::default(),
    };
    let mut header = [0u64; HEADER_WORDS];
    header[0] = u64::from_le_bytes(MAGIC);
    header[1] = VERSION;
    header[2] = len;
    header[3] = u64::from(data.k);
    header[4] = u64::from(data.plan.k());
    header[5] = data.plan.levels().len() as u64;
    for (i, &b) in data.plan.levels().iter().enumerate() {
        header[6 + i] = u64::from(b);
    }
    header[10] = n;
    header[11] = m;
    header[12] = data.next_id as u64;
    header[13] = t;
    w.words(&header)?;
    w.words(data.fps)?;
    let ids: Vec<u64> = data.ids.iter().map(|&x| x as u64).collect();
    w.words(&ids)?;
    drop(ids);
    let packed: Vec<u64> = data
        .by_id
        .chunks(2)
        .map(|c| u64::from(c[0]) | (u64::from(*c.get(1).unwrap_or(&0)) << 32))
        .collect();
    w.words(&packed)?;
    drop(packed);
    for table in &data.tables {
        w.words(table)?;
    }
    let sum = w.sum.value();
    w.out.write_all(&sum.to_le_bytes())?;
    let file = w.out.into_inner().map_err(|e| Error::Io(e.into_error()))?;
    file.sync_all()?;
    Ok(())
}

/// What a path that is not a regular file names, for [`Error::NotAFile`].
pub(crate) fn kind_of(file_type: std::fs::FileType) -> Option<&'static str> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return Some("a named pipe (FIFO)");
        }
        if file_type.is_char_device() || file_type.is_block_device() {
            return Some("a device");
        }
        if file_type.is_socket() {
            return Some("a socket");
        }
    }
    if file_type.is_dir() {
        Some("a folder")
    } else if file_type.is_file() {
        None
    } else {
        Some("not a regular file")
    }
}

/// Opens a file of one of the core's formats (magic bytes `magic`, the file's length as the third
/// word of its header), mapped into memory (`mmap`) or read into it: a folder, FIFO or device is
/// refused before it is opened (opening a FIFO would wait for a writer), and the magic bytes and
/// the declared length are checked before the file is mapped or read, so a large foreign file is
/// refused without reading it. `what` names the format in errors ("index", "dedup index").
pub(crate) fn open_checked(
    path: &Path,
    mmap: bool,
    magic: &[u8; 8],
    what: &str,
) -> Result<(Backing, Option<Source>, u64)> {
    if let Some(kind) = kind_of(std::fs::metadata(path)?.file_type()) {
        return Err(Error::NotAFile(kind));
    }
    let mut file = File::open(path)?;
    let meta = file.metadata()?;
    if let Some(kind) = kind_of(meta.file_type()) {
        return Err(Error::NotAFile(kind)); // replaced since the check above
    }
    let size = meta.len();
    if size == 0 {
        return Err(format_error(0, format!("empty file: not a neardup {what}")));
    }
    let mut head = [0u8; 24];
    let got = usize::try_from(size).map_or(head.len(), |s| s.min(head.len()));
    file.read_exact(&mut head[..got])?;
    if got < 8 || head[..8] != magic[..] {
        return Err(format_error(
            0,
            format!("not a neardup {what} file (wrong magic bytes)"),
        ));
    }
    if got == head.len() {
        let declared = u64::from_le_bytes([
            head[16], head[17], head[18], head[19], head[20], head[21], head[22], head[23],
        ]);
        if declared < size {
            return Err(format_error(
                declared,
                format!("{what} file has {size} bytes but the header says {declared}: trailing data or a damaged header"),
            ));
        } else if declared > size {
            return Err(format_error(
                size,
                format!("truncated {what} file: {size} bytes, the header says {declared}"),
            ));
        }
    }
    file.seek(SeekFrom::Start(0))?;
    let mut source = None;
    let backing = if mmap {
        // SAFETY: the map is read-only. Like every mapped file it may change under us if another
        // process rewrites it in place (neardup itself only ever replaces files by renaming):
        // the index checks `source` before and after every use and refuses a changed file.
        let map = unsafe { memmap2::Mmap::map(&file)? };
        let guard = Guard::new(map.as_ptr(), map.len());
        source = Some(Source {
            file,
            stamp: Stamp::of(&meta),
            path: path.to_path_buf(),
        });
        Backing::Map(guard, map)
    } else {
        let words =
            usize::try_from(size.div_ceil(8)).map_err(|_| format_error(0, "file too large"))?;
        let mut v = vec![0u64; words];
        let size = size as usize;
        file.read_exact(&mut bytemuck::cast_slice_mut::<u64, u8>(&mut v)[..size])?;
        Backing::Heap(v, size)
    };
    Ok((backing, source, size))
}

/// Opens an index file, mapped into memory (`mmap`) or read into it ([`open_checked`]), and
/// checks it whole.
pub fn load(path: &Path, mmap: bool) -> Result<Stored> {
    let (backing, source, _) = open_checked(path, mmap, &MAGIC, "index")?;
    let mut stored = parse(Arc::new(backing))?;
    if let Some(source) = &source {
        // Written while it was read and checked: what was checked may not be what is mapped.
        source.check()?;
    }
    stored.source = source;
    Ok(stored)
}

fn truncated(size: u64, expected: Option<u64>) -> Error {
    match expected {
        Some(e) if size < e => format_error(size, format!("truncated index file: {size} bytes, the header says {e}")),
        Some(e) => format_error(e, format!("index file has {size} bytes but the header says {e}: trailing data or a damaged header")),
        None => format_error(size, format!("truncated or foreign file: {size} bytes is not a whole number of 8-byte words")),
    }
}

fn parse(backing: Arc<Backing>) -> Result<Stored> {
    let bytes = backing.bytes();
    let size = bytes.len() as u64;
    let word = |i: usize| <u64 as Plain>::from_le(&bytes[i * 8..i * 8 + 8]);
    if bytes.len() < 8 || bytes[..8] != MAGIC {
        return Err(format_error(
            0,
            "not a neardup index file (wrong magic bytes)",
        ));
    }
    if bytes.len() < (HEADER_WORDS + 1) * 8 {
        return Err(format_error(
            size,
            format!("truncated index file: {size} bytes is shorter than the header"),
        ));
    }
    let version = word(1);
    if version > VERSION {
        return Err(format_error(
            8,
            format!("index file format version {version} is newer than this neardup reads (version {VERSION}); upgrade neardup"),
        ));
    }
    if version == 0 {
        return Err(format_error(8, "invalid index file format version 0"));
    }
    let declared = word(2);
    if declared != size {
        return Err(truncated(size, Some(declared)));
    }
    if !size.is_multiple_of(8) {
        return Err(truncated(size, None));
    }
    let words = bytes.len() / 8;
    let mut sum = Checksum::default();
    match bytemuck::try_cast_slice::<u8, u64>(bytes) {
        // The file as words, in place: aligned, and little-endian as the file is.
        Ok(all) if cfg!(target_endian = "little") => sum.add_all(&all[..words - 1]),
        _ => (0..words - 1).for_each(|i| sum.add(word(i))),
    }
    if sum.value() != word(words - 1) {
        return Err(format_error(
            size - 8,
            "checksum mismatch: the index file is corrupted",
        ));
    }

    // The checksum matched, but a foreign writer could still produce nonsense: check the rest.
    let k = word(3);
    let plan_k = word(4);
    if k > u64::from(MAX_K) || plan_k > u64::from(MAX_K) || k > plan_k {
        return Err(format_error(
            24,
            format!("invalid k={k} or plan k={plan_k} in the index header"),
        ));
    }
    let levels_n = word(5) as usize;
    if !(1..=MAX_LEVELS).contains(&levels_n) {
        return Err(format_error(
            40,
            format!("invalid number of plan levels {levels_n}"),
        ));
    }
    let levels: Vec<i64> = (0..levels_n)
        .map(|i| word(6 + i).min(1 << 20) as i64)
        .collect();
    let plan = Plan::nested(&levels, plan_k as i64)
        .map_err(|e| format_error(48, format!("invalid plan in the index header: {e}")))?;
    let n = word(10);
    let m = word(11);
    let next_id = word(12) as i64;
    let t = word(13);
    if t != plan.tables().len() as u64 {
        return Err(format_error(
            104,
            format!(
                "header says {t} tables but its plan has {}",
                plan.tables().len()
            ),
        ));
    }
    if m > n || (n > 0 && m == 0) || n > u64::from(u32::MAX) {
        return Err(format_error(
            80,
            format!("invalid counts: {n} entries, {m} distinct fingerprints"),
        ));
    }
    if file_len(n, m, t) != Some(size) {
        return Err(format_error(
            16,
            "the counts in the header do not match the file length",
        ));
    }
    let (n, m) = (n as usize, m as usize);
    let mut at = HEADER_WORDS * 8;
    let fps: Words<u64> = view(&backing, at, n)?;
    at += n * 8;
    let ids: Words<i64> = view(&backing, at, n)?;
    at += n * 8;
    let by_id: Words<u32> = view(&backing, at, n)?;
    at += n.div_ceil(2) * 8;
    let mut tables = Vec::with_capacity(plan.tables().len());
    for _ in 0..plan.tables().len() {
        tables.push(view::<u64>(&backing, at, m)?);
        at += m * 8;
    }
    let bad = |what: &str| {
        format_error(
            HEADER_WORDS as u64 * 8,
            format!("inconsistent index file: {what}"),
        )
    };
    // Entries strictly ascending by (fingerprint, id), with m distinct fingerprints.
    let mut distinct = usize::from(n > 0);
    for i in 1..n {
        if (fps[i - 1], ids[i - 1]) >= (fps[i], ids[i]) {
            return Err(bad("entries out of order"));
        }
        distinct += usize::from(fps[i - 1] != fps[i]);
    }
    if distinct != m {
        return Err(bad("distinct count"));
    }
    // Positions in id order: in range and strictly ascending ids, hence a permutation.
    for i in 0..n {
        if by_id[i] as usize >= n || (i > 0 && ids[by_id[i - 1] as usize] >= ids[by_id[i] as usize])
        {
            return Err(bad("id order"));
        }
    }
    // Default ids start at next_id: it must be past every id, or the index would hand out an id
    // it holds (an index holding i64::MAX keeps next_id there, and refuses default ids).
    if n > 0 {
        let largest = ids[by_id[n - 1] as usize];
        if next_id <= largest && !(largest == i64::MAX && next_id == i64::MAX) {
            return Err(format_error(
                96,
                format!(
                    "invalid next id {next_id} in the index header: the largest id is {largest}"
                ),
            ));
        }
    }
    let mut fp_sum = 0u64;
    let mut fp_xor = 0u64;
    for i in 0..n {
        if i == 0 || fps[i - 1] != fps[i] {
            fp_sum = fp_sum.wrapping_add(fps[i]);
            fp_xor ^= fps[i].rotate_left(17).wrapping_mul(crate::GOLDEN_GAMMA);
        }
    }
    for (layout, table) in plan.tables().iter().zip(&tables) {
        let (mut s, mut x) = (0u64, 0u64);
        for i in 0..m {
            if i > 0 && table[i - 1] >= table[i] {
                return Err(bad("a table out of order"));
            }
            let fp = layout.permutation.invert(table[i]);
            s = s.wrapping_add(fp);
            x ^= fp.rotate_left(17).wrapping_mul(crate::GOLDEN_GAMMA);
        }
        if (s, x) != (fp_sum, fp_xor) {
            return Err(bad("a table does not hold the indexed fingerprints"));
        }
    }
    Ok(Stored {
        k: k as u32,
        plan,
        next_id,
        fps,
        ids,
        by_id,
        tables,
        source: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_sees_every_single_word_change() {
        let words: Vec<u64> = (0..64).map(|i| i * 0x1234_5678_9abc).collect();
        let mut base = Checksum::default();
        base.add_all(&words);
        for i in 0..words.len() {
            for bit in [0, 13, 63] {
                let mut w = words.clone();
                w[i] ^= 1 << bit;
                let mut c = Checksum::default();
                c.add_all(&w);
                assert_ne!(c.value(), base.value());
            }
        }
    }
}
