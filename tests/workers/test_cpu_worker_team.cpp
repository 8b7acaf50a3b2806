// The CPU worker's team beside the NPU (GGML_XDNA_NPU_HOST_CORE): how many threads it computes with, and so whether
// the NPU's rows cost it a thread, which is where the auto split keeps the NPU out unless asked (compute.cpp).
#include "workers/cpu/cpu_worker.h"

#include <gtest/gtest.h>

using xdna::cpu_worker;

TEST(cpu_worker_team, a_thread_is_left_only_where_the_team_would_take_every_core) {
    const int auto_policy = -1, never = 0, always = 1;
    // auto: from 4 cores, when the threads take every core
    EXPECT_EQ(cpu_worker::threads_beside_npu(auto_policy, 16, 16), 15);
    EXPECT_EQ(cpu_worker::threads_beside_npu(auto_policy, 20, 16), 19);
    EXPECT_EQ(cpu_worker::threads_beside_npu(auto_policy, 8, 16), 8);    // the spec's -t 8: a core is free anyway
    EXPECT_EQ(cpu_worker::threads_beside_npu(auto_policy, 2, 2), 2);     // 2 cores: a core costs more than stalls
    EXPECT_EQ(cpu_worker::threads_beside_npu(auto_policy, 4, 4), 3);
    // asked for, on any machine; never, on none
    EXPECT_EQ(cpu_worker::threads_beside_npu(always, 2, 2), 1);
    EXPECT_EQ(cpu_worker::threads_beside_npu(always, 1, 1), 1);          // one thread stays
    EXPECT_EQ(cpu_worker::threads_beside_npu(always, 8, 16), 8);
    EXPECT_EQ(cpu_worker::threads_beside_npu(never, 16, 16), 16);
}
