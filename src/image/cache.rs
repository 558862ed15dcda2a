//! The metadata an image reader keeps: L2 tables, grain tables, block
//! maps, decompressed clusters. Bounded in bytes; the least recently used
//! entry goes first. `check` reads a few places of a guest disk many
//! times (the table, each layer's header), so a small cache spares most
//! re-reads.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io;
use std::rc::Rc;

/// Entries by key (a table's or a unit's byte offset in the file), most
/// recently used last.
pub struct Cache {
    max_bytes: usize,
    entries: RefCell<VecDeque<(u64, Rc<[u8]>)>>,
}

impl Cache {
    /// A cache holding at most `max_bytes` (at least one entry, whatever
    /// its size, so a reader always makes progress).
    pub fn new(max_bytes: usize) -> Self {
        Cache {
            max_bytes,
            entries: RefCell::new(VecDeque::new()),
        }
    }

    /// The entry at `key`, loaded by `load` when it is not held.
    pub fn get_or_load(
        &self,
        key: u64,
        load: impl FnOnce() -> io::Result<Vec<u8>>,
    ) -> io::Result<Rc<[u8]>> {
        let mut entries = self.entries.borrow_mut();
        if let Some(i) = entries.iter().position(|(k, _)| *k == key) {
            let e = entries.remove(i).expect("position is in range");
            let data = e.1.clone();
            entries.push_back(e);
            return Ok(data);
        }
        drop(entries);
        let data: Rc<[u8]> = load()?.into();
        let mut entries = self.entries.borrow_mut();
        let mut used: usize = entries.iter().map(|(_, d)| d.len()).sum();
        while !entries.is_empty() && used + data.len() > self.max_bytes {
            used -= entries.pop_front().map_or(0, |(_, d)| d.len());
        }
        entries.push_back((key, data.clone()));
        Ok(data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn holds_what_fits_and_drops_the_oldest() {
        let c = Cache::new(20);
        let loads = Cell::new(0);
        let load = |n: usize| {
            loads.set(loads.get() + 1);
            Ok(vec![0u8; n])
        };
        c.get_or_load(1, || load(10)).unwrap();
        c.get_or_load(2, || load(10)).unwrap();
        c.get_or_load(1, || load(10)).unwrap();
        assert_eq!(loads.get(), 2);
        c.get_or_load(3, || load(10)).unwrap(); // drops 2, the least recent
        c.get_or_load(1, || load(10)).unwrap();
        assert_eq!(loads.get(), 3);
        c.get_or_load(2, || load(10)).unwrap();
        assert_eq!(loads.get(), 4);
        // An entry larger than the bound is still held alone.
        assert_eq!(c.get_or_load(9, || load(50)).unwrap().len(), 50);
    }
}
