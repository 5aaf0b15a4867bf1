// Package consolidation holds, in its tests only, the proof of sizing's
// answer on real databases: MariaDB under sysbench and PostgreSQL under
// pgbench, observed alone, their consolidation on one volume of a limited
// capacity predicted by `iomatrix fit --rehearse --with-caps`, and then
// done for real under the caps proposed, at a capacity where fit says
// FITS and at one where it does not. docs/sizing.md walks through it and
// gives its figures.
//
// It is a package of its own so that its four and a half minutes run
// beside the command line's tests rather than after them (the go command
// runs one package's tests one after the other, and packages side by
// side), and it builds the iomatrix command it runs.
package consolidation
