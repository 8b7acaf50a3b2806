// Software XDNA1: command states of XRT's embedded runtime (same names and values as XRT's xrt/detail/ert.h).
#ifndef XDNA_EMU_ERT_H
#define XDNA_EMU_ERT_H

enum ert_cmd_state {
    ERT_CMD_STATE_NEW        = 1,
    ERT_CMD_STATE_QUEUED     = 2,
    ERT_CMD_STATE_RUNNING    = 3,
    ERT_CMD_STATE_COMPLETED  = 4,
    ERT_CMD_STATE_ERROR      = 5,
    ERT_CMD_STATE_ABORT      = 6,
    ERT_CMD_STATE_SUBMITTED  = 7,
    ERT_CMD_STATE_TIMEOUT    = 8,
    ERT_CMD_STATE_NORESPONSE = 9,
    ERT_CMD_STATE_SKERROR    = 10,
    ERT_CMD_STATE_SKCRASHED  = 11,
    ERT_CMD_STATE_MAX,
};

#endif
