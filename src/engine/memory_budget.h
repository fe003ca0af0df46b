// One memory budget shared by every engine of a process (the router's --memory-budget, issue 16): each loaded
// model holds an account whose charge covers its resident weights, its committed (or reserved) KV, its
// forward-pass scratch and its heap overhead. A charge is all or nothing and succeeds only when it fits the
// limit and no older waiter is ahead of it (first come, first served across models), so the sum of the
// accounts never passes the limit. What cannot be charged waits: the account is queued as a waiter, the
// reclaimer (the router's housekeeping thread) is signalled to free idle memory elsewhere, and every refund
// wakes the waiters so that they retry. Thread-safe; the budget's mutex is a leaf (callbacks run without it).
// Design: docs/decisions/0007-memory-budget.md.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace lazyslot {

// Bytes charged to one account, by part.
struct BudgetCharge {
  uint64_t weights = 0;   // the mapped tensor bytes, while they may be resident
  uint64_t kv = 0;        // busy slots' worst-case reservation + idle slots' kept KV
  uint64_t scratch = 0;   // an upper bound of the forward pass's activations
  uint64_t overhead = 0;  // the model's heap outside the other parts (tokenizer tables, samplers, ...)
  uint64_t total() const { return weights + kv + scratch + overhead; }
  BudgetCharge& operator+=(const BudgetCharge& o);
};

// "weights 340.8 MiB, kv 0.0 MiB, scratch 31.2 MiB, overhead 20.0 MiB".
std::string DescribeCharge(const BudgetCharge& c);

class MemoryBudget;

// Wakes one waiter (an engine's scheduler). Shared with the budget so that a waiter that goes away (Disarm)
// is never called after it is gone; the call takes only this object's own leaf mutex.
class BudgetWaker {
 public:
  explicit BudgetWaker(std::function<void()> wake) : wake_(std::move(wake)) {}
  void Wake();
  void Disarm();  // after it returns, Wake never calls the function again

 private:
  std::mutex mu_;
  std::function<void()> wake_;
};

// One model's share of a MemoryBudget. Refunds whatever it still holds when destroyed.
class BudgetAccount {
 public:
  ~BudgetAccount();
  BudgetAccount(const BudgetAccount&) = delete;
  BudgetAccount& operator=(const BudgetAccount&) = delete;

  const std::string& name() const { return name_; }
  MemoryBudget& budget() const { return *budget_; }
  BudgetCharge charge() const;

  // Adds `add` to the account if the budget's total stays within the limit and no waiter older than this
  // account waits (an account that is not waiting counts as the youngest). All or nothing. On success the
  // account stops waiting.
  bool TryCharge(const BudgetCharge& add);
  // Takes `sub` off (each part clamped to what is held) and wakes the waiters.
  void Refund(const BudgetCharge& sub);
  // Sets the account's charge to `want`: decreases are refunded, increases charged (false, and nothing
  // changed, if they do not fit).
  bool Set(const BudgetCharge& want);

  // Queues the account as a waiter for `need` more bytes (or updates its need) and signals the reclaimer.
  // The account keeps its place in the queue until a TryCharge succeeds or StopWaiting.
  void Wait(uint64_t need);
  void StopWaiting();
  bool waiting() const;
  // Called (without any budget lock) after every refund and whenever the head of the queue changes, while
  // the account waits. Null: no call (a caller that polls with MemoryBudget::WaitForChange).
  void SetWaker(std::shared_ptr<BudgetWaker> waker);

 private:
  friend class MemoryBudget;
  BudgetAccount(std::shared_ptr<MemoryBudget> budget, std::string name)
      : budget_(std::move(budget)), name_(std::move(name)) {}
  std::shared_ptr<MemoryBudget> budget_;
  const std::string name_;
  // Guarded by the budget's mutex.
  BudgetCharge charge_;
  std::shared_ptr<BudgetWaker> waker_;
};

class MemoryBudget : public std::enable_shared_from_this<MemoryBudget> {
 public:
  // limit: bytes; must be positive.
  static std::shared_ptr<MemoryBudget> Create(uint64_t limit);

  uint64_t limit() const { return limit_; }
  uint64_t used() const;
  uint64_t peak() const;  // the most `used` ever was

  std::shared_ptr<BudgetAccount> Open(std::string name);

  // The oldest waiter: its name and the bytes it needs more; false when none waits.
  struct Waiter {
    std::string name;
    const BudgetAccount* account = nullptr;  // identity only: it may be gone by the time it is read
    uint64_t need = 0;
  };
  bool HeadWaiter(Waiter* out) const;
  int waiters() const;

  // Called (without the budget's lock) when an account starts waiting: the router's reclaimer wakes up.
  void SetReclaimSignal(std::function<void()> signal);

  // Blocks until a refund, a queue change or `deadline`; false on timeout. For threads that wait for room
  // themselves (a router load).
  bool WaitForChange(std::chrono::steady_clock::time_point deadline);

  // "used 812.3 of 1024.0 MiB; m1: weights ..., kv ...; m2: ..." (every open account with a charge).
  std::string Describe() const;

 private:
  friend class BudgetAccount;
  explicit MemoryBudget(uint64_t limit) : limit_(limit) {}
  struct Queued {
    BudgetAccount* account;
    uint64_t need;
  };
  // Wakes every waiter and the threads in WaitForChange; caller holds no budget lock.
  void WakeAll();
  void RemoveWaiterLocked(BudgetAccount* a);

  const uint64_t limit_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  uint64_t used_ = 0, peak_ = 0;
  uint64_t version_ = 0;     // bumped by every refund and queue change (WaitForChange)
  std::list<Queued> queue_;  // waiters, oldest first
  std::vector<BudgetAccount*> accounts_;
  std::function<void()> signal_;
};

}  // namespace lazyslot
