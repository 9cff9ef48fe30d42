//! The world's side of an exploration: the choices it asks the
//! [`Chooser`] for at each message and named point, and what they cost.

use super::*;
use crate::world::World;
use crate::world::port::{Carried, Link};

impl World {
    /// The exploration's decision for a message carrying `carried` sent
    /// on `link` at `now` that the seed would deliver at `arrival`: when
    /// it arrives (`None`: lost).
    pub(in crate::world) fn explore_message(
        &self,
        chooser: &std::sync::Mutex<Chooser>,
        (link, carried): (Link, Carried),
        now: Instant,
        arrival: Instant,
    ) -> Option<Instant> {
        let state = self.state_hash_if_asked(chooser);
        let mut c = lock(chooser);
        let options = c.message_options();
        let at = c.trace.len() as u32;
        let from = link.from;
        // A message's place: its link and what it carries, so that two
        // messages one node sends at one state are two places.
        // The node ids go into the hash as they are (no text is made per
        // message): a place is told from another by them as by their names.
        let place = hash_of(&(ChoiceKind::Message, from, link.to, carried));
        let actor = hash_of(&(ChoiceKind::Message, from));
        let pct = c.pct.is_some().then(|| c.pct_message(at, from, options));
        let chosen = c.choose(ChoiceKind::Message, (place, actor), options, state);
        let chosen = pct.unwrap_or(chosen);
        if let Some(last) = c.trace.last_mut() {
            last.chosen = chosen;
        }
        let window = Duration::from_millis(c.schedule.window_ms);
        match chosen {
            0 => Some(arrival),
            1 => Some(arrival + window),
            2 => {
                c.faults_used += 1;
                None
            }
            3 => {
                c.faults_used += 1;
                let late = Duration::from_millis(self.cfg.rpc_timeout_ms) + window;
                Some(now.max(arrival) + late)
            }
            v => Some(arrival + window * u32::from(v - 2)),
        }
    }

    /// The exploration's decision for `node` at its system's point
    /// `point` (by the system's name for it): go on (`None`), crash or
    /// freeze. Always `None` in a run without an exploration schedule.
    pub fn explore_stop(&self, node: &str, point: &str) -> Option<ExploreStop> {
        let chooser = self.chooser.as_ref()?;
        let state = self.state_hash_if_asked(chooser);
        let mut c = lock(chooser);
        let options = c.stop_options();
        let at = c.trace.len() as u32;
        let pct = c.pct.is_some().then(|| c.pct_stop(at, options));
        let place = hash_of(&(ChoiceKind::Stop, point, node));
        let actor = hash_of(&(ChoiceKind::Stop, node));
        let chosen = c.choose(ChoiceKind::Stop, (place, actor), options, state);
        let chosen = pct.unwrap_or(chosen);
        if let Some(last) = c.trace.last_mut() {
            last.chosen = chosen;
        }
        let ms = c.schedule.stop_ms;
        let stop = match chosen {
            0 => return None,
            1 => ExploreStop::Crash {
                restart_after_ms: ms,
            },
            _ => ExploreStop::Pause { duration_ms: ms },
        };
        c.stops_used += 1;
        Some(stop)
    }

    /// Whether an exploration schedule steers this run.
    pub fn exploring(&self) -> bool {
        self.chooser.is_some()
    }

    /// The choices the run made (empty without a schedule).
    pub(crate) fn take_choices(&self) -> Vec<Choice> {
        self.chooser
            .as_ref()
            .map(|c| lock(c).take_trace())
            .unwrap_or_default()
    }

    /// Set where the system's state hash comes from (the tenant).
    pub(crate) fn set_state_source(&self, tenant: &Arc<dyn crate::world::Tenant>) {
        let weak = Arc::downgrade(tenant);
        let _ = self
            .state_source
            .set(Box::new(move || weak.upgrade()?.state_hash()));
    }

    /// The hash of the world's and the system's state, if the schedule
    /// asks for it and the system gives one now.
    fn state_hash_if_asked(&self, chooser: &std::sync::Mutex<Chooser>) -> Option<u64> {
        let budgets = {
            let c = lock(chooser);
            let at = c.trace.len() as u32;
            if !c.schedule.hash_states || at < c.schedule.hash_from {
                return None;
            }
            (c.faults_used, c.stops_used)
        };
        let system = (self.state_source.get()?)()?;
        // Hashed as they are, into one hasher: nothing is copied.
        let mut h = StateHasher::default();
        (system, budgets).hash(&mut h);
        lock(&self.running).hash(&mut h);
        self.hash_queued_requests(&mut h);
        // How far the run has got (events recorded), so that two moments of
        // one run with the same stores are not taken for one state.
        self.recorder().events().len().hash(&mut h);
        Some(h.finish())
    }

    /// Hash the requests waiting at every port, by address and kind, as
    /// how long from now each arrives.
    fn hash_queued_requests(&self, h: &mut StateHasher) {
        let now = Instant::now();
        let ports: Vec<_> = lock(&self.ports)
            .iter()
            .filter_map(|(a, p)| Some((*a, p.upgrade()?)))
            .collect();
        ports.len().hash(h);
        for (a, p) in ports {
            a.hash(h);
            p.hash_queued(now, h);
        }
    }
}
