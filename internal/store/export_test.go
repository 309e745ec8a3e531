package store

// FiringColumns are the columns of a webhook a firing that hands over
// reads.
const FiringColumns = targetColumns + ", " + handoffColumns
