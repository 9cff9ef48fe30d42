//! Reading a history file straight into the compact form: serde visitors
//! that intern every string as the parser hands it over (no `String` per
//! row, column or value, no tree of the whole document).
//!
//! They accept exactly what deriving `Deserialize` for [`crate::History`]
//! accepts (unknown fields ignored, duplicate fields refused, `Option`
//! fields optional); on any error the caller reads the file again the
//! ordinary way to name the problem.

use crate::compact::{CLock, COp, CState, CVersion, Compact, Mark, NIL, OpKind, Txn};
use crate::fastread::{self, Miss};
use crate::history::{CellRef, LockState, ObserverRun, Scan, VersionKind};
use crate::keys::{CELL, KINDS, OP, TXN, VERSION};
use crate::window::{ReadError, Window, refuse};
use serde::Deserializer;
use serde::de::{DeserializeSeed, Error, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;
use std::marker::PhantomData;

/// Reads a whole history of `len_bytes` bytes (a size hint) from `reader`
/// (JSON) into the compact form: the document's outer levels are walked by
/// a [`Window`], and each transaction and each store cell is parsed from
/// memory on its own.
pub(crate) fn read(reader: impl std::io::Read, len_bytes: u64) -> Result<Compact, ReadError> {
    read_window(Window::new(reader), len_bytes)
}

/// From this size on (a size hint) a history's transactions and store cells
/// are read on two threads (see [`pipelined`]): below it a second thread
/// costs more than it saves, and a campaign reads many small histories, each
/// on a core of its own already.
const TWO_THREADS_FROM_BYTES: u64 = 8 << 20;

/// [`read`] from a window already made (over a mapped file, say).
pub(crate) fn read_window<R: std::io::Read>(
    w: Window<R>,
    len_bytes: u64,
) -> Result<Compact, ReadError> {
    read_window_with(w, len_bytes, len_bytes >= TWO_THREADS_FROM_BYTES)
}

/// [`read_window`], on two threads when `two_threads` is set: the history
/// read is the same either way.
fn read_window_with<R: std::io::Read>(
    mut w: Window<R>,
    len_bytes: u64,
    two_threads: bool,
) -> Result<Compact, ReadError> {
    let mut c = Compact::for_file_size(len_bytes);
    top(&mut w, &mut c, two_threads)?;
    c.strs.drop_index();
    match w.peek()? {
        None => Ok(c),
        Some(_) => Err(refuse("trailing characters")),
    }
}

/// A whole value of type `T`, parsed from memory.
fn whole<T: serde::de::DeserializeOwned>(v: &[u8]) -> Result<T, ReadError> {
    Ok(serde_json::from_slice(v)?)
}

/// The value `v`, parsed from memory with `seed`.
fn seeded<'de, S: DeserializeSeed<'de>>(seed: S, v: &'de [u8]) -> Result<S::Value, ReadError> {
    let mut de = serde_json::Deserializer::from_slice(v);
    let out = seed.deserialize(&mut de)?;
    de.end()?;
    Ok(out)
}

/// Walks an object's members: `each(window, index of the key in names)`
/// reads the value (unknown keys' values are parsed and ignored); duplicate
/// keys are refused; returns the bits of the keys seen.
fn members<R: std::io::Read>(
    w: &mut Window<R>,
    depth: usize,
    names: &'static [&'static str],
    mut each: impl FnMut(&mut Window<R>, usize) -> Result<(), ReadError>,
) -> Result<u32, ReadError> {
    let mut seen = 0u32;
    w.expect(b'{')?;
    if w.peek()? == Some(b'}') {
        return w.expect(b'}').map(|()| seen);
    }
    loop {
        let key: String = whole(w.value(depth + 1)?)?;
        w.expect(b':')?;
        match names.iter().position(|k| *k == key) {
            Some(k) => {
                once::<serde_json::Error>(&mut seen, k, names)?;
                each(w, k)?;
            }
            None => {
                whole::<IgnoredAny>(w.value(depth + 1)?)?;
            }
        }
        match w.peek()? {
            Some(b',') => w.expect(b',')?,
            Some(b'}') => return w.expect(b'}').map(|()| seen),
            _ => return Err(refuse("expected `,` or `}`")),
        }
    }
}

/// An array of transactions or store cells: each run of elements of the
/// usual shape through `fast` (the scanner of `fastread.rs`, which takes a
/// batch of them at a time), any other element through `slow` (the
/// visitors) on its text. With `two_threads` the runs of the usual shape
/// are read on two threads (see [`pipelined`]) up to the first element of
/// another shape; the rest of the array is read on this one.
fn fast_elements<R: std::io::Read>(
    w: &mut Window<R>,
    c: &mut Compact,
    fast: &fastread::Elements,
    slow: fn(&mut Compact, &[u8]) -> Result<(), ReadError>,
    two_threads: bool,
) -> Result<(), ReadError> {
    w.expect(b'[')?;
    if w.peek()? == Some(b']') {
        return w.expect(b']');
    }
    if two_threads && pipelined(w, c, fast)? == Ended::Array {
        return Ok(());
    }
    let mut scratch = fastread::Scratch::default();
    loop {
        w.peek()?;
        match fast.read(w.rest(), c, &mut scratch) {
            Ok(n) => w.advance(n),
            Err(Miss::Short) if w.more()? => continue,
            Err(_) => slow(c, w.value(2)?)?,
        }
        if after_element(w)? == Ended::Array {
            return Ok(());
        }
    }
}

/// Where a run of elements ended.
#[derive(PartialEq, Eq)]
enum Ended {
    /// At the array's `]`, which was read.
    Array,
    /// Before an element (a `,` was read): the element is next.
    Element,
}

/// Reads what follows an array element: a `,` or the closing `]`.
fn after_element<R: std::io::Read>(w: &mut Window<R>) -> Result<Ended, ReadError> {
    match w.peek()? {
        Some(b',') => w.expect(b',').map(|()| Ended::Element),
        Some(b']') => w.expect(b']').map(|()| Ended::Array),
        _ => Err(refuse("expected `,` or `]`")),
    }
}

/// How many scanned batches go to the other thread at a time. With one
/// hand-over per batch (each may have to wake the thread) a 1M-transaction
/// file was checked more slowly than on one thread.
const PARCEL_BATCHES: usize = 16;

/// How many parcels of batches may wait for the other thread.
const PIPELINE_DEPTH: usize = 2;

/// Scanned batches on their way to the other thread and back, in scan
/// order, each with where its text starts in a mapped file.
type Parcel = Vec<(usize, fastread::Scratch)>;

/// What one thread of [`pipelined`] does to each batch besides scanning:
/// intern its strings into `strs` or add it to `history`.
struct Stage<'h> {
    strs: Option<&'h mut crate::compact::Strs>,
    history: Option<&'h mut Compact>,
}

impl<'h> Stage<'h> {
    /// Interns into `strs`.
    fn interning(strs: &'h mut crate::compact::Strs) -> Stage<'h> {
        Stage {
            strs: Some(strs),
            history: None,
        }
    }

    /// Adds to `history`.
    fn adding(history: &'h mut Compact) -> Stage<'h> {
        Stage {
            strs: None,
            history: Some(history),
        }
    }
}

/// Reads the elements of the usual shape from the window's position (at an
/// element) on two threads. This one scans each batch and hands it over;
/// the strings are interned and the batches added to `c` in the order
/// they were scanned, so the history is the one a single thread makes (the
/// same ids in the same order). When the window is a mapped file, the
/// other thread interns (reading the strings from the map) and this one
/// adds each batch when it comes back; otherwise (only this thread holds
/// the text) this one interns and the other adds. Either way the two
/// threads' work is about even. It stops at the array's end, or before the
/// first element the scanner does not take.
fn pipelined<R: std::io::Read>(
    w: &mut Window<R>,
    c: &mut Compact,
    fast: &fastread::Elements,
) -> Result<Ended, ReadError> {
    let mut strs = std::mem::take(&mut c.strs);
    let map = w.shared_map();
    let (here, there) = match map {
        Some(_) => (Stage::adding(c), Stage::interning(&mut strs)),
        None => (Stage::interning(&mut strs), Stage::adding(c)),
    };
    let add = fast.add;
    let ended = std::thread::scope(|scope| {
        let (full, to_work) = std::sync::mpsc::sync_channel::<Parcel>(PIPELINE_DEPTH);
        let (worked, back) = std::sync::mpsc::channel::<Parcel>();
        let other = scope.spawn(move || {
            let mut stage = there;
            for mut parcel in to_work {
                for (at, s) in &mut parcel {
                    if let (Some(strs), Some(map)) = (stage.strs.as_deref_mut(), map.as_deref()) {
                        fastread::intern(&map[*at..], strs, s);
                    }
                    if let Some(history) = stage.history.as_deref_mut() {
                        add(history, s);
                    }
                }
                // The scanner may have stopped; the parcel then goes unused.
                if worked.send(parcel).is_err() {
                    break;
                }
            }
        });
        let mut here = here;
        let ended = scan_batches(w, &mut here, fast, &full, &back);
        drop(full);
        // The batches still with the other thread come back in order.
        if ended.is_ok() {
            for parcel in back.iter() {
                take_back(&mut here, add, parcel);
            }
        }
        // A panic on the other thread surfaces here, as it would have on this one.
        other
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e));
        ended
    });
    c.strs = strs;
    ended
}

/// A parcel back from the other thread of [`pipelined`]: its batches
/// added here when this thread adds; its scratches free again.
fn take_back(
    here: &mut Stage<'_>,
    add: fn(&mut Compact, &mut fastread::Scratch),
    mut parcel: Parcel,
) -> Vec<fastread::Scratch> {
    if let Some(history) = here.history.as_deref_mut() {
        for (_, s) in &mut parcel {
            add(history, s);
        }
    }
    parcel.into_iter().map(|(_, s)| s).collect()
}

/// The scanning half of [`pipelined`] (interning too when `here` holds
/// the strings): the batches taken go to `full` in parcels; they come back
/// through `back`, to be added here when `here` holds the history, and
/// their scratches are used again. While the other thread's queue is full,
/// this one takes back what it finished (and adds it, when this thread
/// adds) rather than wait for a place in the queue.
fn scan_batches<R: std::io::Read>(
    w: &mut Window<R>,
    here: &mut Stage<'_>,
    fast: &fastread::Elements,
    full: &std::sync::mpsc::SyncSender<Parcel>,
    back: &std::sync::mpsc::Receiver<Parcel>,
) -> Result<Ended, ReadError> {
    let mut free: Vec<fastread::Scratch> = Vec::new();
    let mut parcel = Parcel::with_capacity(PARCEL_BATCHES);
    let ended = loop {
        w.peek()?;
        if free.is_empty()
            && let Ok(p) = back.try_recv()
        {
            free = take_back(here, fast.add, p);
        }
        let mut s = free.pop().unwrap_or_default();
        let at = w.position();
        match (fast.scan)(w.rest(), &mut s) {
            Ok(n) => {
                if let Some(strs) = here.strs.as_deref_mut() {
                    fastread::intern(w.rest(), strs, &mut s);
                }
                w.advance(n);
                parcel.push((at, s));
                if parcel.len() == PARCEL_BATCHES {
                    let sent =
                        std::mem::replace(&mut parcel, Parcel::with_capacity(PARCEL_BATCHES));
                    if !hand_over(here, fast.add, full, back, sent, &mut free) {
                        return Ok(Ended::Element);
                    }
                }
            }
            Err(Miss::Short) if w.more()? => {
                free.push(s);
                continue;
            }
            Err(_) => break Ended::Element,
        }
        if after_element(w)? == Ended::Array {
            break Ended::Array;
        }
    };
    if !parcel.is_empty() {
        // Refused only when the other thread panicked: `pipelined` says so.
        let _ = full.send(parcel);
    }
    Ok(ended)
}

/// Sends `parcel` to the other thread; while its queue is full, takes a
/// parcel back (adding it here when this thread adds) instead of waiting
/// idle. False when the other thread is gone (it panicked, and
/// `pipelined` says so).
fn hand_over(
    here: &mut Stage<'_>,
    add: fn(&mut Compact, &mut fastread::Scratch),
    full: &std::sync::mpsc::SyncSender<Parcel>,
    back: &std::sync::mpsc::Receiver<Parcel>,
    mut parcel: Parcel,
    free: &mut Vec<fastread::Scratch>,
) -> bool {
    use std::sync::mpsc::TrySendError;
    loop {
        match full.try_send(parcel) {
            Ok(()) => return true,
            Err(TrySendError::Disconnected(_)) => return false,
            Err(TrySendError::Full(p)) => {
                parcel = p;
                // The queue is full, so the other thread holds parcels it
                // will send back: wait for one.
                match back.recv() {
                    Ok(done) => free.extend(take_back(here, add, done)),
                    Err(_) => return false,
                }
            }
        }
    }
}

const TOP: &[&str] = &[
    "format",
    "seed",
    "transactions",
    "events",
    "final_state",
    "observers",
    "scenario",
    "model",
];

/// The whole document.
fn top<R: std::io::Read>(
    w: &mut Window<R>,
    c: &mut Compact,
    two_threads: bool,
) -> Result<(), ReadError> {
    let seen = members(w, 0, TOP, |w, k| {
        match k {
            0 => c.format = whole(w.value(1)?)?,
            1 => c.seed = whole(w.value(1)?)?,
            2 => fast_elements(
                w,
                c,
                &fastread::TXNS,
                |c, v| seeded(One::<TxnPart>::new(c), v),
                two_threads,
            )?,
            3 => c.events = whole(w.value(1)?)?,
            4 => final_state(w, c, two_threads)?,
            5 => c.observers = whole(w.value(1)?)?,
            7 => c.model = whole(w.value(1)?)?,
            _ => {
                whole::<IgnoredAny>(w.value(1)?)?;
            }
        }
        Ok(())
    })?;
    Ok(require::<serde_json::Error>(seen, &[0, 2, 4], TOP)?)
}

/// A map key, as its index in a list of known names (`None`: unknown).
struct Key(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Option<usize>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for Key {
    type Value = Option<usize>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }
    fn visit_str<E: Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(self.0.iter().position(|k| *k == v))
    }
}

/// Marks field `k` as seen; a second sighting is an error, as with derive.
fn once<E: Error>(seen: &mut u32, k: usize, names: &[&'static str]) -> Result<(), E> {
    if *seen & (1 << k) != 0 {
        return Err(E::duplicate_field(names[k]));
    }
    *seen |= 1 << k;
    Ok(())
}

/// Every field in `required` (bit indices) was seen.
fn require<E: Error>(seen: u32, required: &[usize], names: &[&'static str]) -> Result<(), E> {
    match required.iter().find(|&&k| seen & (1 << k) == 0) {
        Some(&k) => Err(E::missing_field(names[k])),
        None => Ok(()),
    }
}

/// A string, interned; `Option` when `nullable` (null gives [`NIL`]).
struct Str<'c> {
    c: &'c mut Compact,
    nullable: bool,
}

impl<'de> DeserializeSeed<'de> for Str<'_> {
    type Value = u32;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<u32, D::Error> {
        if self.nullable {
            d.deserialize_option(self)
        } else {
            d.deserialize_str(self)
        }
    }
}

impl<'de> Visitor<'de> for Str<'_> {
    type Value = u32;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: Error>(self, v: &str) -> Result<u32, E> {
        Ok(self.c.strs.intern(v))
    }
    fn visit_none<E: Error>(self) -> Result<u32, E> {
        Ok(NIL)
    }
    fn visit_unit<E: Error>(self) -> Result<u32, E> {
        Ok(NIL)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<u32, D::Error> {
        d.deserialize_str(Str {
            c: self.c,
            nullable: false,
        })
    }
}

/// A part of the document that a map visitor reads straight into the
/// compact form: a transaction, an op, a store cell or a version. [`One`]
/// reads one, [`Many`] a sequence of them; `read` walks the members.
trait Part {
    /// What reading one gives.
    type Out;
    /// What it is, for the parser's "expected ..." (the caller names the
    /// problem by reading the file again the ordinary way).
    const WHAT: &'static str;
    /// Reads one from its members.
    fn read<'de, A: MapAccess<'de>>(c: &mut Compact, m: A) -> Result<Self::Out, A::Error>;
}

/// One [`Part`], read from a map.
struct One<'c, P>(&'c mut Compact, PhantomData<P>);

impl<'c, P> One<'c, P> {
    fn new(c: &'c mut Compact) -> Self {
        One(c, PhantomData)
    }
}

impl<'de, P: Part> DeserializeSeed<'de> for One<'_, P> {
    type Value = P::Out;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<P::Out, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, P: Part> Visitor<'de> for One<'_, P> {
    type Value = P::Out;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(P::WHAT)
    }
    fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<P::Out, A::Error> {
        P::read(self.0, m)
    }
}

/// A sequence of [`Part`]s, each handed to `push` as it is read.
struct Many<'c, P: Part> {
    c: &'c mut Compact,
    push: fn(&mut Compact, P::Out),
}

impl<'de, P: Part> DeserializeSeed<'de> for Many<'_, P> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, P: Part> Visitor<'de> for Many<'_, P> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a sequence, each {}", P::WHAT)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(x) = seq.next_element_seed(One::<P>::new(&mut *self.c))? {
            (self.push)(&mut *self.c, x);
        }
        Ok(())
    }
}

/// The next known key of a map, as its index in `names`, marked in `seen`
/// (a second sighting is an error); unknown keys' values are skipped.
fn next_key<'de, A: MapAccess<'de>>(
    m: &mut A,
    names: &'static [&'static str],
    seen: &mut u32,
) -> Result<Option<usize>, A::Error> {
    while let Some(k) = m.next_key_seed(Key(names))? {
        match k {
            Some(k) => {
                once::<A::Error>(seen, k, names)?;
                return Ok(Some(k));
            }
            None => {
                m.next_value::<IgnoredAny>()?;
            }
        }
    }
    Ok(None)
}

/// A transaction, pushed onto [`Compact::txns`] with its ops and scans.
struct TxnPart;

impl Part for TxnPart {
    type Out = ();
    const WHAT: &'static str = "a transaction";
    fn read<'de, A: MapAccess<'de>>(c: &mut Compact, mut m: A) -> Result<(), A::Error> {
        let mut seen = 0u32;
        let mut t = Txn::default();
        let ops_before = c.ops.len();
        let mut scans = Vec::new();
        while let Some(k) = next_key(&mut m, TXN, &mut seen)? {
            match k {
                0 => t.id = m.next_value()?,
                1 => t.client = m.next_value()?,
                2 => t.start_ts = m.next_value()?,
                3 => t.set_commit_ts(m.next_value()?),
                4 => t.invoke_ns = m.next_value()?,
                5 => t.set_complete_ns(m.next_value()?),
                6 => t.outcome = m.next_value()?,
                7 => {
                    let (c, nullable) = (&mut *c, true);
                    t.abort_reason = m.next_value_seed(Str { c, nullable })?;
                }
                8 => m.next_value_seed(Many::<OpPart> {
                    c: &mut *c,
                    push: |c, op| c.ops.push(op),
                })?,
                9 => t.observer = mark(c, m.next_value::<Option<ObserverRun>>()?),
                _ => scans = m.next_value::<Vec<Scan>>()?,
            }
        }
        if let Err(e) = require::<A::Error>(seen, &[0, 1, 2, 4, 6, 8], TXN) {
            c.ops.truncate(ops_before);
            return Err(e);
        }
        let index = c.txns.len() as u32;
        c.scans.extend(scans.into_iter().map(|s| (index, s)));
        c.push_txn(t);
        Ok(())
    }
}

/// Records an observer mark; its index, or [`NIL`].
fn mark(c: &mut Compact, run: Option<ObserverRun>) -> u32 {
    let Some(run) = run else {
        return NIL;
    };
    let m = Mark {
        name: c.strs.intern(&run.name),
        cell: c.cell_str(&run.row, &run.col),
    };
    c.runs.push(m);
    c.runs.len() as u32 - 1
}

/// One op of a transaction's `ops`.
struct OpPart;

impl Part for OpPart {
    type Out = COp;
    const WHAT: &'static str = "an op";
    fn read<'de, A: MapAccess<'de>>(c: &mut Compact, mut m: A) -> Result<COp, A::Error> {
        let mut seen = 0u32;
        let (mut kind, mut row, mut col, mut value) = (None, NIL, NIL, NIL);
        while let Some(k) = next_key(&mut m, OP, &mut seen)? {
            let nullable = k == 3;
            match k {
                0 => match m.next_value_seed(Key(KINDS))? {
                    Some(0) => kind = Some(OpKind::Read),
                    Some(1) => kind = Some(OpKind::Write),
                    Some(2) => kind = Some(OpKind::Delete),
                    _ => return Err(A::Error::custom("unknown op kind")),
                },
                1 => row = m.next_value_seed(Str { c, nullable })?,
                2 => col = m.next_value_seed(Str { c, nullable })?,
                _ => value = m.next_value_seed(Str { c, nullable })?,
            }
        }
        let Some(kind) = kind else {
            return Err(A::Error::missing_field("f"));
        };
        require::<A::Error>(seen, &[1, 2], OP)?;
        match kind {
            OpKind::Write if value == NIL => return Err(A::Error::missing_field("value")),
            OpKind::Delete => value = NIL,
            _ => {}
        }
        let cell = c.cell(row, col);
        Ok(COp { kind, cell, value })
    }
}

const FINAL: &[&str] = &["cells", "locks", "notify"];

/// `final_state`.
fn final_state<R: std::io::Read>(
    w: &mut Window<R>,
    c: &mut Compact,
    two_threads: bool,
) -> Result<(), ReadError> {
    let seen = members(w, 1, FINAL, |w, k| {
        match k {
            0 => fast_elements(
                w,
                c,
                &fastread::CELLS,
                |c, v| seeded(One::<CellPart>::new(c), v),
                two_threads,
            )?,
            1 => {
                for l in whole::<Vec<LockState>>(w.value(2)?)? {
                    let lock = CLock {
                        cell: c.cell_str(&l.row, &l.col),
                        start_ts: l.start_ts,
                        primary: c.cell_str(&l.primary.row, &l.primary.col),
                    };
                    c.locks.push(lock);
                }
            }
            _ => {
                for n in whole::<Vec<CellRef>>(w.value(2)?)? {
                    let cell = c.cell_str(&n.row, &n.col);
                    c.notify.push(cell);
                }
            }
        }
        Ok(())
    })?;
    Ok(require::<serde_json::Error>(seen, &[0], FINAL)?)
}

/// A store cell, pushed onto [`Compact::state`] with its versions.
struct CellPart;

impl Part for CellPart {
    type Out = ();
    const WHAT: &'static str = "a cell";
    fn read<'de, A: MapAccess<'de>>(c: &mut Compact, mut m: A) -> Result<(), A::Error> {
        let mut seen = 0u32;
        let (mut row, mut col, nullable) = (NIL, NIL, false);
        let lo = c.versions.len();
        while let Some(k) = next_key(&mut m, CELL, &mut seen)? {
            match k {
                0 => row = m.next_value_seed(Str { c, nullable })?,
                1 => col = m.next_value_seed(Str { c, nullable })?,
                _ => m.next_value_seed(Many::<VersionPart> {
                    c: &mut *c,
                    push: |c, v| c.versions.push(v),
                })?,
            }
        }
        require::<A::Error>(seen, &[0, 1, 2], CELL)?;
        let cell = c.cell(row, col);
        let hi = c.versions.len();
        c.state.push(CState { cell, lo, hi });
        Ok(())
    }
}

/// One version of a store cell's `versions`.
struct VersionPart;

impl Part for VersionPart {
    type Out = CVersion;
    const WHAT: &'static str = "a version";
    fn read<'de, A: MapAccess<'de>>(c: &mut Compact, mut m: A) -> Result<CVersion, A::Error> {
        let mut seen = 0u32;
        let mut v = CVersion {
            start_ts: 0,
            commit_ts: 0,
            kind: VersionKind::Put,
            value: NIL,
            data_missing: false,
        };
        while let Some(k) = next_key(&mut m, VERSION, &mut seen)? {
            match k {
                0 => v.start_ts = m.next_value()?,
                1 => v.commit_ts = m.next_value()?,
                2 => v.kind = m.next_value()?,
                3 => v.value = m.next_value_seed(Str { c, nullable: true })?,
                _ => v.data_missing = m.next_value()?,
            }
        }
        require::<A::Error>(seen, &[0, 1, 2], VERSION)?;
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::{Window, fastread};
    use crate::{check, check_compact, parse, parse::validate};

    /// Every fixture, read by the stream and by [`parse()`]: the same verdict
    /// to the byte, the same acceptance, and the same validation error.
    #[test]
    fn the_stream_agrees_with_parse_on_every_fixture() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .expect("fixtures")
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        assert!(files.len() > 40, "{} fixtures", files.len());
        for path in files {
            let text = std::fs::read_to_string(&path).expect("readable");
            let slow = parse(&text);
            let fast = super::read(text.as_bytes(), text.len() as u64);
            let name = path.display();
            match (&slow, fast) {
                (Ok(h), Ok(c)) => {
                    validate(&c).unwrap_or_else(|e| panic!("{name}: {e}"));
                    assert_eq!(check(h), check_compact(c), "{name}");
                }
                (Err(e), Ok(c)) => {
                    let err = validate(&c).expect_err(&format!("{name}: stream accepted"));
                    assert_eq!(err.to_string(), e.to_string(), "{name}");
                }
                (Err(_), Err(_)) => {}
                (Ok(_), Err(e)) => panic!("{name}: the stream refused a valid history: {e}"),
            }
        }
    }

    /// The JSON files among the checker's test fixtures.
    fn json_fixtures() -> impl Iterator<Item = std::path::PathBuf> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let entries = std::fs::read_dir(dir).expect("fixtures");
        let paths = entries.map(|entry| entry.expect("entry").path());
        paths.filter(|path| path.extension().is_some_and(|x| x == "json"))
    }

    /// Every valid fixture written again as the writer writes it (compact:
    /// the scanners' exact shape, see `fastread/exact.rs`) reads as
    /// [`parse()`] reads it.
    #[test]
    fn the_writers_text_of_every_fixture_reads_as_parse_reads_it() {
        let mut checked = 0;
        for path in json_fixtures() {
            let Ok(h) = parse(&std::fs::read_to_string(&path).expect("readable")) else {
                continue;
            };
            let text = serde_json::to_string(&h).expect("json");
            let name = path.display();
            let c = super::read(text.as_bytes(), text.len() as u64)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            validate(&c).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(check(&h), check_compact(c), "{name}");
            checked += 1;
        }
        assert!(checked > 30, "{checked} fixtures read");
    }

    /// An input that hands over a few bytes at a time (a pipe, a slow
    /// disk): every value then spans refills of the window.
    /// (the bytes left, how many a read hands over at most).
    struct Trickle<'a>(&'a [u8], usize);

    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(self.0.len()).min(self.1);
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    /// Read seven bytes at a time, every fixture gives the same verdict as
    /// when read whole.
    #[test]
    fn short_reads_change_nothing() {
        let mut checked = 0;
        for path in json_fixtures() {
            let text = std::fs::read(&path).expect("readable");
            let whole = super::read(text.as_slice(), 0);
            let trickled = super::read(Trickle(&text, 7), 0);
            match (whole, trickled) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(check_compact(a), check_compact(b), "{}", path.display());
                    checked += 1;
                }
                (Err(_), Err(_)) => {}
                _ => panic!("{}: accepted one way only", path.display()),
            }
        }
        assert!(checked > 40, "{checked} fixtures read");
    }

    /// What derive refuses, the stream refuses too (it then hands over to the
    /// ordinary reader for the message).
    #[test]
    fn the_stream_refuses_what_derive_refuses() {
        let base = r#"{"format": "percsim-history/1", "transactions": [
            {"id": 1, "client": 1, "start_ts": 1, "commit_ts": 2, "invoke_ns": 0,
             "outcome": "committed", "ops": [{"f": "write", "row": "r", "col": "c", "value": "v"}]}],
            "final_state": {"cells": []}}"#;
        assert!(super::read(base.as_bytes(), 0).is_ok());
        assert!(parse(base).is_ok());
        let bad = [
            base.replace("\"id\": 1,", "\"id\": 1, \"id\": 1,"),
            base.replace("\"client\": 1,", ""),
            base.replace("\"write\"", "\"put\""),
            base.replace(", \"value\": \"v\"", ""),
            base.replace("\"value\": \"v\"", "\"value\": null"),
            base.replace("\"row\": \"r\",", "\"row\": 5,"),
            base.replace("{\"cells\": []}", "{\"locks\": []}"),
            base.replace("\"format\"", "\"scenario\": 1, \"scenario\": 2, \"format\""),
            format!("{base} x"),
        ];
        for b in &bad {
            assert!(parse(b).is_err(), "{b}");
            assert!(super::read(b.as_bytes(), 0).is_err(), "{b}");
        }
    }

    /// Everything read into `c`, as text: every string in id order, the
    /// transactions, ops, cells, store cells and versions.
    fn dump(c: &crate::compact::Compact) -> String {
        let strs: Vec<&str> = (0..c.strs.len() as u32).map(|i| c.strs.get(i)).collect();
        format!(
            "{strs:?} {:?} {:?} {:?} {:?} {:?} {:?}",
            c.txns, c.op_off, c.ops, c.cells, c.state, c.versions
        )
    }

    /// A history of `n` transactions and `n` store cells of the usual
    /// shape, but for the one at `odd` (a value with an escape, which the
    /// scanner leaves to the visitors).
    fn history_text(n: usize, odd: usize) -> String {
        let value = |i: usize| {
            if i == odd {
                format!("v{i}\\u0041")
            } else {
                format!("v{i}")
            }
        };
        let txns: Vec<String> = (0..n)
            .map(|i| {
                format!(
                    r#"{{"id":{i},"client":{c},"start_ts":{s},"commit_ts":{e},"invoke_ns":{s},"complete_ns":{e},"outcome":"committed","abort_reason":null,"ops":[{{"f":"read","row":"r{r}","col":"c","value":null}},{{"f":"write","row":"r{i}","col":"c","value":"{v}"}}]}}"#,
                    c = i % 7,
                    s = 2 * i + 1,
                    e = 2 * i + 2,
                    r = i / 2,
                    v = value(i),
                )
            })
            .collect();
        let cells: Vec<String> = (0..n)
            .map(|i| {
                format!(
                    r#"{{"row":"r{i}","col":"c","versions":[{{"start_ts":{s},"commit_ts":{e},"kind":"put","value":"{v}"}}]}}"#,
                    s = 2 * i + 1,
                    e = 2 * i + 2,
                    v = value(i),
                )
            })
            .collect();
        format!(
            r#"{{"format":"percsim-history/1","seed":1,"transactions":[{}],"events":[],"final_state":{{"cells":[{}],"locks":[]}}}}"#,
            txns.join(","),
            cells.join(",")
        )
    }

    /// A window over `text` written to a file and mapped, dropping what was
    /// read every 1 MiB (`tag` names the file).
    fn mapped(text: &str, tag: usize) -> Window<std::io::Empty> {
        let name = format!("percsim-reader-{}-{tag}.json", std::process::id());
        let path = std::env::temp_dir().join(name);
        std::fs::write(&path, text).expect("write the file");
        let file = std::fs::File::open(&path).expect("open the file");
        // SAFETY: the file is this test's own; nobody changes it while it is mapped.
        let map = unsafe { memmap2::Mmap::map(&file) }.expect("map the file");
        // The map stays valid once the file's name is gone.
        std::fs::remove_file(&path).expect("remove the file");
        Window::mapped_with(map, 1 << 20)
    }

    /// Read on two threads, a history is what one thread reads, to every
    /// id: whether an element of another shape comes early, late or never
    /// (the two threads stop there and one reads the rest).
    #[test]
    fn two_threads_read_what_one_reads() {
        let n = 12 * super::PARCEL_BATCHES * fastread::BATCH_LEN;
        // The usual shape is the scanner's: the threads have work to share.
        let text = history_text(2, 2);
        let first = text.find('[').expect("transactions") + 1;
        let mut c = crate::compact::Compact::new();
        let mut s = fastread::Scratch::default();
        let taken = fastread::TXNS.read(&text.as_bytes()[first..], &mut c, &mut s);
        assert_eq!(c.txns.len(), 2, "{taken:?}");
        for odd in [0, 3, n / 2, n - 1, n] {
            let text = history_text(n, odd);
            let one = super::read_window_with(Window::new(text.as_bytes()), 0, false);
            let one = one.expect("one thread");
            assert_eq!(one.txns.len(), n, "odd {odd}");
            assert_eq!(one.state.len(), n, "odd {odd}");
            // The threads' timing differs from run to run (which scratches
            // have come back when): several runs meet more of them.
            for _ in 0..4 {
                let two = super::read_window_with(Window::new(text.as_bytes()), 0, true);
                assert_eq!(dump(&one), dump(&two.expect("two threads")), "odd {odd}");
            }
            // Handed over a piece at a time, batches are cut short and
            // scanned again once more has come.
            let pieces = Window::new(Trickle(text.as_bytes(), 4093));
            let two = super::read_window_with(pieces, 0, true);
            assert_eq!(dump(&one), dump(&two.expect("in pieces")), "odd {odd}");
            // From a mapped file the other thread interns the strings,
            // reading them from the map, and the scanning one adds the
            // batches as they come back, while the window hands pages it
            // has passed back to the kernel (every 1 MiB here).
            let two = super::read_window_with(mapped(&text, odd), 0, true);
            assert_eq!(dump(&one), dump(&two.expect("mapped")), "odd {odd}");
        }
    }

    /// Every fixture read on two threads is read as on one, or refused as
    /// on one.
    #[test]
    fn two_threads_read_every_fixture_as_one() {
        let mut checked = 0;
        for path in json_fixtures() {
            let text = std::fs::read(&path).expect("readable");
            let one = super::read_window_with(Window::new(text.as_slice()), 0, false);
            let two = super::read_window_with(Window::new(text.as_slice()), 0, true);
            match (one, two) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(dump(&a), dump(&b), "{}", path.display());
                    checked += 1;
                }
                (Err(_), Err(_)) => {}
                _ => panic!("{}: accepted one way only", path.display()),
            }
        }
        assert!(checked > 40, "{checked} fixtures read");
    }
}
