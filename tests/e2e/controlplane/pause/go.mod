module tau.test/controlplane/pause

go 1.26.0
