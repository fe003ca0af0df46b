// MemoryBudget (engine/memory_budget.h) alone: charges are all or nothing and never pass the limit, refunds
// clamp to what is held, accounts refund everything when destroyed, waiters are served first come, first
// served and woken by refunds, and many threads charging at once never see the total above the limit.
#include "engine/memory_budget.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace lazyslot {
namespace {

BudgetCharge Kv(uint64_t n) {
  BudgetCharge c;
  c.kv = n;
  return c;
}

TEST(MemoryBudgetTest, ChargesAreAllOrNothingAndRefundsClamp) {
  auto b = MemoryBudget::Create(1000);
  auto a = b->Open("a");
  BudgetCharge c;
  c.weights = 600;
  c.scratch = 100;
  EXPECT_TRUE(a->TryCharge(c));
  EXPECT_EQ(b->used(), 700u);
  BudgetCharge big;
  big.kv = 200;
  big.overhead = 101;
  EXPECT_FALSE(a->TryCharge(big));  // 1001 > 1000: nothing of it is charged
  EXPECT_EQ(b->used(), 700u);
  EXPECT_EQ(a->charge().kv, 0u);
  a->Refund(Kv(50));  // holds no kv: nothing to give back
  EXPECT_EQ(b->used(), 700u);
  BudgetCharge w;
  w.weights = 10000;
  a->Refund(w);
  EXPECT_EQ(a->charge().weights, 0u);
  EXPECT_EQ(b->used(), 100u);
  EXPECT_EQ(b->peak(), 700u);
  EXPECT_NE(b->Describe().find("a: weights 0.0 MiB"), std::string::npos) << b->Describe();
}

TEST(MemoryBudgetTest, SetMovesEachPartAndADestroyedAccountRefundsAll) {
  auto b = MemoryBudget::Create(1000);
  auto a = b->Open("a");
  auto o = b->Open("other");
  ASSERT_TRUE(o->TryCharge(Kv(300)));
  BudgetCharge want;
  want.weights = 500;
  want.overhead = 100;
  EXPECT_TRUE(a->Set(want));
  EXPECT_EQ(b->used(), 900u);
  want.weights = 700;  // +200 does not fit
  EXPECT_FALSE(a->Set(want));
  EXPECT_EQ(a->charge().weights, 500u);
  want.weights = 100;
  want.kv = 400;  // the weights' refund makes room for the kv
  EXPECT_TRUE(a->Set(want));
  EXPECT_EQ(b->used(), 900u);
  a.reset();
  EXPECT_EQ(b->used(), 300u);
}

TEST(MemoryBudgetTest, WaitersAreServedInOrderAndWokenByRefunds) {
  auto b = MemoryBudget::Create(1000);
  auto holder = b->Open("holder");
  auto first = b->Open("first");
  auto second = b->Open("second");
  std::atomic<int> signals{0};
  b->SetReclaimSignal([&] { ++signals; });
  ASSERT_TRUE(holder->TryCharge(Kv(900)));
  std::atomic<int> woken{0};
  auto waker = std::make_shared<BudgetWaker>([&] { ++woken; });
  second->SetWaker(waker);
  EXPECT_FALSE(first->TryCharge(Kv(500)));
  first->Wait(500);
  EXPECT_FALSE(second->TryCharge(Kv(50)));  // 50 fits, but an older waiter is ahead
  second->Wait(50);
  EXPECT_EQ(b->waiters(), 2);
  EXPECT_EQ(signals.load(), 2);
  MemoryBudget::Waiter head;
  ASSERT_TRUE(b->HeadWaiter(&head));
  EXPECT_EQ(head.name, "first");
  EXPECT_EQ(head.need, 500u);
  const int woken_before = woken.load();
  holder->Refund(Kv(600));
  EXPECT_GT(woken.load(), woken_before);    // a refund wakes the waiters
  EXPECT_FALSE(second->TryCharge(Kv(50)));  // still behind `first`
  EXPECT_TRUE(first->TryCharge(Kv(500)));   // first in line
  EXPECT_FALSE(first->waiting());
  EXPECT_TRUE(second->TryCharge(Kv(50)));
  EXPECT_EQ(b->waiters(), 0);
  EXPECT_EQ(b->used(), 850u);
  // A disarmed waker is never called again.
  waker->Disarm();
  second->Wait(1000);
  holder->Refund(Kv(300));
  second->StopWaiting();
}

TEST(MemoryBudgetTest, WaitForChangeReturnsOnARefund) {
  auto b = MemoryBudget::Create(100);
  auto a = b->Open("a");
  ASSERT_TRUE(a->TryCharge(Kv(100)));
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    a->Refund(Kv(60));
  });
  EXPECT_TRUE(b->WaitForChange(std::chrono::steady_clock::now() + std::chrono::seconds(10)));
  t.join();
  EXPECT_FALSE(b->WaitForChange(std::chrono::steady_clock::now() + std::chrono::milliseconds(20)));
}

TEST(MemoryBudgetTest, ConcurrentChargesNeverPassTheLimit) {
  constexpr uint64_t kLimit = 10000;
  auto b = MemoryBudget::Create(kLimit);
  std::atomic<bool> stop{false}, over{false};
  std::thread watcher([&] {
    while (!stop.load()) {
      if (b->used() > kLimit) over = true;
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      auto a = b->Open("t" + std::to_string(t));
      for (int i = 0; i < 20000; ++i) {
        const uint64_t n = 100 + (i * 37 + t * 11) % 3000;
        if (a->TryCharge(Kv(n))) a->Refund(Kv(n / 2));
        if (i % 7 == 0) a->Refund(Kv(1000000));
      }
    });
  }
  for (auto& th : threads) th.join();
  stop = true;
  watcher.join();
  EXPECT_FALSE(over.load());
  EXPECT_LE(b->peak(), kLimit);
  EXPECT_EQ(b->used(), 0u);  // every account refunded all when it went
}

}  // namespace
}  // namespace lazyslot
