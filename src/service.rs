//! Operations a service defines for itself and a shard runs for it, without the shard
//! runtime naming either. A service (the group or transaction coordinator, topic admin,
//! security changes, producer ids) declares what it is sent, what it answers and what it
//! needs of its shard (its host trait); the shard registers it once with the way to build
//! that host, and carries its calls across cores as an opaque [`Call`] and [`Reply`].

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::future::Future;

use futures_lite::future::BoxedLocal;
use futures_lite::FutureExt;

/// A service that runs on a shard.
pub trait Service: 'static {
    /// Its name in logs and errors.
    const NAME: &'static str;
    /// What it needs of the shard that runs it (its host trait, as an owned handle).
    type Host: 'static;
    /// What is sent to it (across cores: `Send`; cloned when sent to every shard).
    type Op: Send + Clone + fmt::Debug + 'static;
    /// What it answers (across cores back).
    type Reply: Send + Clone + fmt::Debug + 'static;
    /// Runs `op` on the shard `host` stands for.
    fn handle(host: Self::Host, op: Self::Op) -> impl Future<Output = Self::Reply>;
}

/// A value of some service's type, erased to cross cores; it still prints and copies.
trait Erased: Send + fmt::Debug {
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
    fn clone_box(&self) -> Box<dyn Erased>;
}

impl<T: Any + Send + Clone + fmt::Debug> Erased for T {
    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
    fn clone_box(&self) -> Box<dyn Erased> {
        Box::new(self.clone())
    }
}

/// One operation of one service, on its way to the shard that runs it.
pub struct Call {
    service: TypeId,
    name: &'static str,
    op: Box<dyn Erased>,
}

impl Clone for Call {
    fn clone(&self) -> Self {
        Call {
            service: self.service,
            name: self.name,
            op: self.op.clone_box(),
        }
    }
}

impl Call {
    pub fn new<S: Service>(op: S::Op) -> Call {
        Call {
            service: TypeId::of::<S>(),
            name: S::NAME,
            op: Box::new(op),
        }
    }

    /// The service it is for.
    pub fn service(&self) -> &'static str {
        self.name
    }
}

impl fmt::Debug for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({:?})", self.name, self.op)
    }
}

/// A service's answer to one [`Call`].
pub struct Reply {
    service: TypeId,
    name: &'static str,
    value: Box<dyn Erased>,
}

impl Reply {
    fn new<S: Service>(value: S::Reply) -> Reply {
        Reply {
            service: TypeId::of::<S>(),
            name: S::NAME,
            value: Box::new(value),
        }
    }

    /// The answer as service `S` gave it; the reply itself when it is another service's.
    pub fn take<S: Service>(self) -> Result<S::Reply, Reply> {
        if self.service != TypeId::of::<S>() {
            return Err(self);
        }
        let value = self.value.into_any().downcast::<S::Reply>();
        // A reply is built only by `Reply::new::<S>`, so its type id names its value's type.
        let value = value.unwrap_or_else(|_| panic!("{}'s reply holds its own type", S::NAME));
        Ok(*value)
    }
}

impl Clone for Reply {
    fn clone(&self) -> Self {
        Reply {
            service: self.service,
            name: self.name,
            value: self.value.clone_box(),
        }
    }
}

impl fmt::Debug for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({:?})", self.name, self.value)
    }
}

/// A call for a service no one registered: a wiring mistake, reported rather than run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unregistered(pub &'static str);

impl fmt::Display for Unregistered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no service {} is registered on this shard", self.0)
    }
}

type Runner<C> = Box<dyn Fn(&C, Box<dyn Erased>) -> BoxedLocal<Reply>>;

/// The services a shard runs, each with the way to build its host from the shard `C`.
pub struct Registry<C> {
    runners: HashMap<TypeId, Runner<C>>,
}

impl<C> Default for Registry<C> {
    fn default() -> Self {
        Registry {
            runners: HashMap::new(),
        }
    }
}

impl<C: 'static> Registry<C> {
    /// Runs `S`'s calls from now on, each with the host `host_of` builds for it.
    pub fn register<S: Service>(&mut self, host_of: fn(&C) -> S::Host) {
        let runner: Runner<C> = Box::new(move |shard, op| {
            let host = host_of(shard);
            let op = op.into_any().downcast::<S::Op>();
            // `Call::new::<S>` is the only maker of a call keyed by `S`.
            let op = *op.unwrap_or_else(|_| panic!("{}'s call holds its own op type", S::NAME));
            let work = S::handle(host, op);
            async move { Reply::new::<S>(work.await) }.boxed_local()
        });
        let earlier = self.runners.insert(TypeId::of::<S>(), runner);
        assert!(earlier.is_none(), "service {} registered twice", S::NAME);
    }

    /// The work of `call`, to be awaited by the shard `shard`.
    pub fn run(&self, shard: &C, call: Call) -> Result<BoxedLocal<Reply>, Unregistered> {
        let runner = self
            .runners
            .get(&call.service)
            .ok_or(Unregistered(call.name))?;
        Ok(runner(shard, call.op))
    }

    /// How many services are registered.
    pub fn len(&self) -> usize {
        self.runners.len()
    }

    pub fn is_empty(&self) -> bool {
        self.runners.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Doubler;
    impl Service for Doubler {
        const NAME: &'static str = "doubler";
        type Host = i64;
        type Op = i64;
        type Reply = i64;
        async fn handle(host: i64, op: i64) -> i64 {
            host + 2 * op
        }
    }

    struct Namer;
    impl Service for Namer {
        const NAME: &'static str = "namer";
        type Host = ();
        type Op = String;
        type Reply = String;
        async fn handle(_: (), op: String) -> String {
            format!("hello {op}")
        }
    }

    #[test]
    fn a_call_runs_on_the_service_it_names_and_answers_in_its_type() {
        let mut registry = Registry::<i64>::default();
        registry.register::<Doubler>(|base| *base);
        registry.register::<Namer>(|_| ());
        assert_eq!(registry.len(), 2);
        let call = Call::new::<Doubler>(20);
        assert_eq!(format!("{call:?}"), "doubler(20)");
        let reply = futures_lite::future::block_on(registry.run(&1, call).unwrap());
        assert_eq!(format!("{reply:?}"), "doubler(41)");
        let reply = reply.take::<Namer>().unwrap_err();
        assert_eq!(reply.take::<Doubler>().unwrap(), 41);
        let named = registry
            .run(&0, Call::new::<Namer>("shard".into()))
            .unwrap();
        let named = futures_lite::future::block_on(named).take::<Namer>();
        assert_eq!(named.unwrap(), "hello shard");
    }

    #[test]
    fn a_call_for_an_unregistered_service_is_refused_by_name() {
        let registry = Registry::<i64>::default();
        let refused = registry.run(&0, Call::new::<Namer>("x".into())).err();
        assert_eq!(refused, Some(Unregistered("namer")));
    }

    #[test]
    #[should_panic(expected = "registered twice")]
    fn a_service_registers_once() {
        let mut registry = Registry::<i64>::default();
        registry.register::<Doubler>(|base| *base);
        registry.register::<Doubler>(|base| *base);
    }
}
