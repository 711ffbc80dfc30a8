//! Appends that queue in one process land together (group commit). Every append to a chain
//! joins the chain's queue and waits for the chain's turn; whoever gets the turn takes what
//! is queued then (up to a batch) and lands it in one step, answering each append its own
//! record, while the appends that arrive meanwhile queue for the next turn. One turn's wait is
//! then one landing, however many calls are waiting, where taking turns one append at
//! a time made the last of eight wait for seven (one landing for each batch queued ahead, when
//! more than a batch is queued).
//!
//! The queue decides who lands what and when, and keeps what the last landing left for the
//! next (see [`Left`]); planning and landing a batch is [`super::commit`]'s. Other processes
//! still race through the store's conditional writes.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use tokio::sync::OwnedMutexGuard;
use tokio::time::Instant;

use crate::store::{ChainKey, KnownWindow, Winner};

/// Every chain's queue in this process.
pub struct AppendQueues<T> {
    chains: Mutex<HashMap<ChainKey, Weak<ChainQueue<T>>>>,
}

impl<T> Default for AppendQueues<T> {
    fn default() -> Self {
        Self {
            chains: Mutex::default(),
        }
    }
}

/// How many chains' queues are remembered before the ones nobody waits in are forgotten.
const REMEMBERED_QUEUES: usize = 1024;

impl<T> AppendQueues<T> {
    /// The queue of `key`, kept while anyone holds it.
    pub fn of(&self, key: &ChainKey) -> Arc<ChainQueue<T>> {
        let mut chains = self.chains.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(queue) = chains.get(key).and_then(Weak::upgrade) {
            return queue;
        }
        if chains.len() >= REMEMBERED_QUEUES {
            chains.retain(|_, queue| queue.strong_count() > 0);
        }
        let queue = Arc::new(ChainQueue {
            waiting: Mutex::default(),
            next_ticket: AtomicU64::new(0),
            turn: Arc::default(),
            left: Mutex::default(),
        });
        chains.insert(key.clone(), Arc::downgrade(&queue));
        queue
    }

    /// Whether the next append to `key` will not use a read of the chain made now: an append
    /// holds the chain's turn (the read would be stale by the time the next turn comes), or
    /// one just landed and left its heads for the next (see [`Left`]).
    pub fn reads_nothing_next(&self, key: &ChainKey) -> bool {
        let chains = self.chains.lock().unwrap_or_else(PoisonError::into_inner);
        chains
            .get(key)
            .and_then(Weak::upgrade)
            .is_some_and(|queue| {
                queue.turn.try_lock().is_err()
                    || queue
                        .left
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .as_ref()
                        .is_some_and(Left::serves)
            })
    }
}

/// One chain's queue and turn.
pub struct ChainQueue<T> {
    waiting: Mutex<VecDeque<(u64, T)>>,
    next_ticket: AtomicU64,
    turn: Arc<tokio::sync::Mutex<()>>,
    /// Where the last batch left the chain (see [`ChainQueue::leave`]).
    left: Mutex<Option<Left>>,
}

/// The heads a batch left the chain with, and what it knew of the window, so that the next
/// batch, if it comes soon, starts from them instead of reading the chain again: a read would
/// mostly show what this process wrote. A stale head (another process appended) costs one
/// refused write that names the current one, as on a hot chain (see `store::HotChains`).
#[derive(Debug, Clone)]
pub struct Left {
    pub heads: Winner,
    pub known: KnownWindow,
    at: Instant,
}

/// How long what a batch left serves the next: an append's budget. It lives with the chain's
/// queue, which lives only while a call holds it: a call that finds no other call to its
/// chain in flight starts a new queue, reads the window and verifies it, as every append to a
/// quiet chain does.
const LEFT_SERVES: std::time::Duration = crate::store::APPEND_BUDGET;

impl Left {
    fn serves(&self) -> bool {
        self.at.elapsed() < LEFT_SERVES
    }
}

/// A queued append: withdrawn from the queue when dropped, so that a call that ends (its
/// budget spent, or its client gone) while its append is still queued leaves nothing to be
/// landed for it. Once a landing has taken the append, it lands whether or not its call waits.
pub struct Ticket<T> {
    queue: Arc<ChainQueue<T>>,
    number: u64,
}

impl<T> Drop for Ticket<T> {
    fn drop(&mut self) {
        self.queue.withdraw(self.number);
    }
}

/// What a call that queued an append does once the chain's turn comes, or its deadline.
pub enum Turn<T> {
    /// It holds the turn, and these appends (taken from the queue's front, in order) are its
    /// to land, then answer, then give the turn up by dropping `turn`. `waited`: another call
    /// held the turn first, so what this call read before queueing is likely stale. `own`:
    /// whether its own append is among them; when not (a batch's worth or a log reset was
    /// queued ahead of it), it waits for the turn again once it has started these.
    Lead {
        appends: Vec<T>,
        turn: OwnedMutexGuard<()>,
        waited: bool,
        own: bool,
    },
    /// Its append was taken by the call that held the turn before: its answer comes from
    /// there.
    Taken,
    /// Its deadline came while its append was still queued, and it was withdrawn: nothing
    /// was written for it.
    Withdrawn,
}

impl<T> ChainQueue<T> {
    /// Queues `append`; the ticket withdraws it if it is still queued when dropped.
    pub fn join(self: &Arc<Self>, append: T) -> Ticket<T> {
        let number = self.next_ticket.fetch_add(1, Ordering::Relaxed);
        self.waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push_back((number, append));
        Ticket {
            queue: self.clone(),
            number,
        }
    }

    /// Waits for the chain's turn until `deadline`. With the turn, takes the queue's front: up
    /// to `most` appends, stopping before one that must land `alone`, or that one by itself.
    /// A call whose append was taken before it got the turn gives the turn up at once: the
    /// turn's holder answers every append it took before it lets the turn go, so that answer
    /// is already there.
    pub async fn turn(
        &self,
        ticket: &Ticket<T>,
        deadline: Instant,
        most: usize,
        alone: impl Fn(&T) -> bool,
    ) -> Turn<T> {
        let (turn, waited) = match self.turn.clone().try_lock_owned() {
            Ok(turn) => (turn, false),
            Err(_) => match tokio::time::timeout_at(deadline, self.turn.clone().lock_owned()).await
            {
                Ok(turn) => (turn, true),
                Err(_) if self.withdraw(ticket.number) => return Turn::Withdrawn,
                Err(_) => return Turn::Taken,
            },
        };
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        if !waiting.iter().any(|(number, _)| *number == ticket.number) {
            return Turn::Taken;
        }
        let mut appends = Vec::new();
        let mut own = false;
        while let Some((_, next)) = waiting.front() {
            let by_itself = alone(next);
            if appends.len() == most || (by_itself && !appends.is_empty()) {
                break;
            }
            let (number, append) = waiting.pop_front().expect("the front was just seen");
            own |= number == ticket.number;
            appends.push(append);
            if by_itself {
                break;
            }
        }
        Turn::Lead {
            appends,
            turn,
            waited,
            own,
        }
    }

    /// Whether appends are queued for the next turn.
    #[cfg(test)]
    fn has_waiting(&self) -> bool {
        !self
            .waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_empty()
    }

    /// Notes where a batch left the chain, for the next (see [`Left`]).
    pub fn leave(&self, heads: Winner, known: KnownWindow) {
        *self.left.lock().unwrap_or_else(PoisonError::into_inner) = Some(Left {
            heads,
            known,
            at: Instant::now(),
        });
    }

    /// Where the last batch left the chain, if it landed just now; taken, so it serves once.
    pub fn take_left(&self) -> Option<Left> {
        self.left
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .filter(Left::serves)
    }

    /// Takes append `number` out of the queue; `false` when it was not there (taken already).
    fn withdraw(&self, number: u64) -> bool {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        match waiting.iter().position(|(queued, _)| *queued == number) {
            Some(at) => waiting.remove(at).is_some(),
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> ChainKey {
        ChainKey {
            scope: "s/why".into(),
            name: "home".into(),
        }
    }

    fn deadline() -> Instant {
        Instant::now() + std::time::Duration::from_secs(1)
    }

    #[tokio::test]
    async fn the_first_call_leads_what_is_queued_in_order_up_to_the_most() {
        let queues = AppendQueues::<u32>::default();
        let queue = queues.of(&key());
        let tickets: Vec<_> = (0..5).map(|n| queue.join(n)).collect();
        let Turn::Lead {
            appends,
            turn,
            waited,
            own,
        } = queue.turn(&tickets[0], deadline(), 3, |_| false).await
        else {
            panic!("the first call leads");
        };
        assert_eq!(appends, vec![0, 1, 2]);
        assert!(!waited);
        assert!(own);
        assert!(queues.reads_nothing_next(&key()), "the turn is held");
        drop(turn);
        assert!(!queues.reads_nothing_next(&key()));
        // Taken appends are no longer queued; the rest lead next.
        assert!(matches!(
            queue.turn(&tickets[1], deadline(), 3, |_| false).await,
            Turn::Taken
        ));
        let Turn::Lead { appends, own, .. } =
            queue.turn(&tickets[3], deadline(), 3, |_| false).await
        else {
            panic!("a queued call leads");
        };
        assert_eq!(appends, vec![3, 4]);
        assert!(own);
    }

    #[tokio::test]
    async fn an_append_that_must_land_alone_leads_by_itself_and_ends_the_batch_before_it() {
        let queue = AppendQueues::<u32>::default().of(&key());
        let tickets: Vec<_> = [1, 2, 99, 3].into_iter().map(|n| queue.join(n)).collect();
        let alone = |n: &u32| *n == 99;
        let Turn::Lead { appends, turn, .. } = queue.turn(&tickets[0], deadline(), 10, alone).await
        else {
            panic!("leads");
        };
        assert_eq!(appends, vec![1, 2]);
        drop(turn);
        let Turn::Lead { appends, turn, .. } = queue.turn(&tickets[2], deadline(), 10, alone).await
        else {
            panic!("leads");
        };
        assert_eq!(appends, vec![99]);
        drop(turn);
        let Turn::Lead { appends, .. } = queue.turn(&tickets[3], deadline(), 10, alone).await
        else {
            panic!("leads");
        };
        assert_eq!(appends, vec![3]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_whose_deadline_comes_while_queued_is_withdrawn_and_one_taken_is_not() {
        let queue = AppendQueues::<u32>::default().of(&key());
        let first = queue.join(1);
        let Turn::Lead { appends, turn, .. } = queue.turn(&first, deadline(), 1, |_| false).await
        else {
            panic!("leads");
        };
        assert_eq!(appends, vec![1]);
        let second = queue.join(2);
        let soon = Instant::now() + std::time::Duration::from_millis(10);
        assert!(matches!(
            queue.turn(&second, soon, 1, |_| false).await,
            Turn::Withdrawn
        ));
        assert!(!queue.has_waiting(), "withdrawn, so nobody lands it");
        // The turn's holder took the first: its call, out of time, waits for that answer.
        assert!(matches!(
            queue.turn(&first, soon, 1, |_| false).await,
            Turn::Taken
        ));
        drop(turn);
    }

    /// The call that gets the turn leads what is queued ahead of it even when its own append
    /// is not among what one batch takes, and says so: it must wait for the turn again.
    #[tokio::test]
    async fn a_leader_whose_append_is_behind_a_full_batch_or_a_reset_is_told_so() {
        let queue = AppendQueues::<u32>::default().of(&key());
        let tickets: Vec<_> = [1, 2, 3].into_iter().map(|n| queue.join(n)).collect();
        let Turn::Lead {
            appends, turn, own, ..
        } = queue.turn(&tickets[2], deadline(), 2, |_| false).await
        else {
            panic!("leads");
        };
        assert_eq!(appends, vec![1, 2]);
        assert!(!own, "its own is the third, past a batch of two");
        drop(turn);
        let Turn::Lead { appends, own, .. } =
            queue.turn(&tickets[2], deadline(), 2, |_| false).await
        else {
            panic!("leads again");
        };
        assert_eq!((appends, own), (vec![3], true));

        let queue = AppendQueues::<u32>::default().of(&key());
        let tickets: Vec<_> = [1, 99].into_iter().map(|n| queue.join(n)).collect();
        let Turn::Lead { appends, own, .. } =
            queue.turn(&tickets[1], deadline(), 10, |n| *n == 99).await
        else {
            panic!("leads");
        };
        assert_eq!((appends, own), (vec![1], false), "a reset lands alone");
    }

    #[tokio::test]
    async fn a_dropped_ticket_withdraws_its_append() {
        let queue = AppendQueues::<u32>::default().of(&key());
        let ticket = queue.join(7);
        assert!(queue.has_waiting());
        drop(ticket);
        assert!(!queue.has_waiting());
    }
}
