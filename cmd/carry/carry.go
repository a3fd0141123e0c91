package main

import "github.com/kcp-carry/kcp-carry/pkg/carry/carryset"

// loadCarry finds the repository and loads its carry, once, for the
// subcommand to hand to every step.
func (o *commonOptions) loadCarry() (*carryset.Carry, error) {
	root, err := o.repoRoot()
	if err != nil {
		return nil, err
	}
	return carryset.Load(root)
}
