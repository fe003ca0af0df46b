// MemoryBudget and its accounts (memory_budget.h): all-or-nothing charges under one mutex, a first come,
// first served queue of waiters, and wake-ups delivered outside the lock so that no engine lock is ever
// taken while the budget's is held.
#include "engine/memory_budget.h"

#include <algorithm>
#include <cstdio>

namespace lazyslot {
namespace {

std::string MiBText(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / 1048576.0);
  return buf;
}

uint64_t ClampSub(uint64_t have, uint64_t sub) { return sub > have ? 0 : have - sub; }

}  // namespace

BudgetCharge& BudgetCharge::operator+=(const BudgetCharge& o) {
  weights += o.weights;
  kv += o.kv;
  scratch += o.scratch;
  overhead += o.overhead;
  return *this;
}

std::string DescribeCharge(const BudgetCharge& c) {
  return "weights " + MiBText(c.weights) + ", kv " + MiBText(c.kv) + ", scratch " + MiBText(c.scratch) +
         ", overhead " + MiBText(c.overhead);
}

void BudgetWaker::Wake() {
  std::lock_guard<std::mutex> lock(mu_);
  if (wake_) wake_();
}

void BudgetWaker::Disarm() {
  std::lock_guard<std::mutex> lock(mu_);
  wake_ = nullptr;
}

// ---- BudgetAccount -------------------------------------------------------------------------------------

BudgetAccount::~BudgetAccount() {
  MemoryBudget& b = *budget_;
  {
    std::lock_guard<std::mutex> lock(b.mu_);
    b.RemoveWaiterLocked(this);
    b.used_ -= charge_.total();
    b.accounts_.erase(std::remove(b.accounts_.begin(), b.accounts_.end(), this), b.accounts_.end());
    ++b.version_;
  }
  b.WakeAll();
}

BudgetCharge BudgetAccount::charge() const {
  std::lock_guard<std::mutex> lock(budget_->mu_);
  return charge_;
}

bool BudgetAccount::TryCharge(const BudgetCharge& add) {
  MemoryBudget& b = *budget_;
  bool head_changed = false;
  {
    std::lock_guard<std::mutex> lock(b.mu_);
    if (b.used_ + add.total() > b.limit_) return false;
    // First come, first served: an older waiter goes first, whatever fits now.
    for (const MemoryBudget::Queued& q : b.queue_) {
      if (q.account == this) break;
      if (add.total() > 0) return false;
    }
    charge_ += add;
    b.used_ += add.total();
    b.peak_ = std::max(b.peak_, b.used_);
    head_changed = !b.queue_.empty() && b.queue_.front().account == this;
    b.RemoveWaiterLocked(this);
    if (head_changed) ++b.version_;
  }
  if (head_changed) b.WakeAll();  // the next waiter is now first in line
  return true;
}

void BudgetAccount::Refund(const BudgetCharge& sub) {
  MemoryBudget& b = *budget_;
  {
    std::lock_guard<std::mutex> lock(b.mu_);
    const uint64_t before = charge_.total();
    charge_.weights = ClampSub(charge_.weights, sub.weights);
    charge_.kv = ClampSub(charge_.kv, sub.kv);
    charge_.scratch = ClampSub(charge_.scratch, sub.scratch);
    charge_.overhead = ClampSub(charge_.overhead, sub.overhead);
    const uint64_t freed = before - charge_.total();
    if (freed == 0) return;
    b.used_ -= freed;
    ++b.version_;
  }
  b.WakeAll();
}

bool BudgetAccount::Set(const BudgetCharge& want) {
  BudgetCharge add, sub;
  {
    std::lock_guard<std::mutex> lock(budget_->mu_);
    auto split = [](uint64_t have, uint64_t w, uint64_t* a, uint64_t* s) {
      *a = w > have ? w - have : 0;
      *s = have > w ? have - w : 0;
    };
    split(charge_.weights, want.weights, &add.weights, &sub.weights);
    split(charge_.kv, want.kv, &add.kv, &sub.kv);
    split(charge_.scratch, want.scratch, &add.scratch, &sub.scratch);
    split(charge_.overhead, want.overhead, &add.overhead, &sub.overhead);
  }
  // Refund first: what this account gives back may be what its increase needs.
  Refund(sub);
  if (add.total() == 0 || TryCharge(add)) return true;
  // Put the refunded parts back (they fitted a moment ago; another account may have taken them since,
  // in which case the account holds less than before, never more than the limit allows).
  (void)TryCharge(sub);
  return false;
}

void BudgetAccount::Wait(uint64_t need) {
  MemoryBudget& b = *budget_;
  std::function<void()> signal;
  {
    std::lock_guard<std::mutex> lock(b.mu_);
    bool found = false;
    for (MemoryBudget::Queued& q : b.queue_) {
      if (q.account == this) {
        q.need = need;
        found = true;
      }
    }
    if (!found) {
      b.queue_.push_back({this, need});
      ++b.version_;
    }
    signal = b.signal_;
  }
  if (signal) signal();  // every time: the reclaimer may have found nothing to free before
}

void BudgetAccount::StopWaiting() {
  MemoryBudget& b = *budget_;
  {
    std::lock_guard<std::mutex> lock(b.mu_);
    const size_t n = b.queue_.size();
    b.RemoveWaiterLocked(this);
    if (b.queue_.size() == n) return;
    ++b.version_;
  }
  b.WakeAll();
}

bool BudgetAccount::waiting() const {
  std::lock_guard<std::mutex> lock(budget_->mu_);
  for (const MemoryBudget::Queued& q : budget_->queue_) {
    if (q.account == this) return true;
  }
  return false;
}

void BudgetAccount::SetWaker(std::shared_ptr<BudgetWaker> waker) {
  std::lock_guard<std::mutex> lock(budget_->mu_);
  waker_ = std::move(waker);
}

// ---- MemoryBudget --------------------------------------------------------------------------------------

std::shared_ptr<MemoryBudget> MemoryBudget::Create(uint64_t limit) {
  return std::shared_ptr<MemoryBudget>(new MemoryBudget(limit));
}

uint64_t MemoryBudget::used() const {
  std::lock_guard<std::mutex> lock(mu_);
  return used_;
}

uint64_t MemoryBudget::peak() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_;
}

std::shared_ptr<BudgetAccount> MemoryBudget::Open(std::string name) {
  std::shared_ptr<BudgetAccount> a(new BudgetAccount(shared_from_this(), std::move(name)));
  std::lock_guard<std::mutex> lock(mu_);
  accounts_.push_back(a.get());
  return a;
}

bool MemoryBudget::HeadWaiter(Waiter* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (queue_.empty()) return false;
  out->name = queue_.front().account->name_;
  out->account = queue_.front().account;
  out->need = queue_.front().need;
  return true;
}

int MemoryBudget::waiters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(queue_.size());
}

void MemoryBudget::SetReclaimSignal(std::function<void()> signal) {
  std::lock_guard<std::mutex> lock(mu_);
  signal_ = std::move(signal);
}

bool MemoryBudget::WaitForChange(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t v = version_;
  return changed_.wait_until(lock, deadline, [&] { return version_ != v; });
}

std::string MemoryBudget::Describe() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out = "used " + MiBText(used_) + " of " + MiBText(limit_);
  for (const BudgetAccount* a : accounts_) {
    if (a->charge_.total() == 0) continue;
    out += "; " + a->name_ + ": " + DescribeCharge(a->charge_);
  }
  return out;
}

void MemoryBudget::WakeAll() {
  std::vector<std::shared_ptr<BudgetWaker>> wakers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Queued& q : queue_) {
      if (q.account->waker_) wakers.push_back(q.account->waker_);
    }
  }
  changed_.notify_all();
  for (auto& w : wakers) w->Wake();
}

void MemoryBudget::RemoveWaiterLocked(BudgetAccount* a) {
  queue_.remove_if([a](const Queued& q) { return q.account == a; });
}

}  // namespace lazyslot
