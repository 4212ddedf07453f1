from ckpt_doctor.cli import main

raise SystemExit(main())
