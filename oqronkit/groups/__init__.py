"""Groups: jobs added together and the callbacks fired when they settle (ledger), read back
(records), and the public functions (api)."""
